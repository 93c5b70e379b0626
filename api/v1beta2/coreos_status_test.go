package v1beta2

import (
	"encoding/json"
	"strings"
	"testing"
)

// Status fields CoreOS's operator always serialised are present even at their zero
// value: scripts written for it read .status.phase and .status.succeeded as they are.
func TestCoreOSStatusFieldsAlwaysSerialised(t *testing.T) {
	for name, v := range map[string]struct {
		obj  any
		want string
	}{
		"EtcdCluster phase":     {EtcdClusterStatus{}, `"phase":""`},
		"EtcdBackup succeeded":  {EtcdBackupStatus{}, `"succeeded":false`},
		"EtcdRestore succeeded": {EtcdRestoreStatus{}, `"succeeded":false`},
	} {
		b, err := json.Marshal(v.obj)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), v.want) {
			t.Errorf("%s: %s lacks %s", name, b, v.want)
		}
	}
}
