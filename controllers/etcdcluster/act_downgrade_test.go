package etcdcluster

import (
	"errors"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// etcd's downgrade state comes from the first answering member that reports it enabled:
// failed answers and members reporting none (etcd 3.5, or no downgrade) say nothing.
func TestDowngradeOf(t *testing.T) {
	if d := downgradeOf(nil); d != nil {
		t.Errorf("no answers: %+v", d)
	}
	sts := []etcdadmin.EndpointStatus{
		{Err: errors.New("timeout"), DowngradeEnabled: true, DowngradeTarget: "3.4.0"},
		{Version: "3.5.36"},
		{Version: "3.6.16", DowngradeEnabled: true, DowngradeTarget: "3.5.0"},
	}
	if d := downgradeOf(sts); d == nil || d.Target != "3.5.0" {
		t.Errorf("downgrade %+v, want target 3.5.0", d)
	}
	if d := downgradeOf(sts[:2]); d != nil {
		t.Errorf("none enabled among answers: %+v", d)
	}
}
