package olmimage

import (
	"os"
	"path/filepath"
	"testing"
)

// releasedAndCurrentCSV reads the CSVs of the released bundle and of the current one.
func releasedAndCurrentCSV(t *testing.T) (prev, cur CSV) {
	t.Helper()
	prev, err := ReadCSV(releasedBundle)
	if err != nil {
		t.Fatal(err)
	}
	cur, err = ReadCSV(currentBundle)
	if err != nil {
		t.Fatal(err)
	}
	return prev, cur
}

func TestReadCSVFollowsTheReleasedChain(t *testing.T) {
	prev, cur := releasedAndCurrentCSV(t)
	if prev.Name != "etcd-operator.v0.1.0" || prev.Replaces != "" {
		t.Errorf("released: %+v, want etcd-operator.v0.1.0 replacing nothing", prev)
	}
	if cur.Replaces != prev.Name {
		t.Errorf("current %s replaces %q, want %q", cur.Name, cur.Replaces, prev.Name)
	}
}

func TestReadCSVWantsExactlyOne(t *testing.T) {
	dir := copyBundle(t, releasedBundle)
	src := filepath.Join(dir, "manifests", "etcd-operator.v0.1.0.clusterserviceversion.yaml")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "copy.clusterserviceversion.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCSV(dir); err == nil {
		t.Error("two CSVs: no error")
	}
	if _, err := ReadCSV(t.TempDir()); err == nil {
		t.Error("no CSV: no error")
	}
}

// 0.1.0 supported OwnNamespace; 0.2.0, with its conversion webhook, only AllNamespaces.
func TestReadCSVInstallModes(t *testing.T) {
	supported := func(c CSV) map[string]bool {
		m := map[string]bool{}
		for _, im := range c.InstallModes {
			m[im.Type] = im.Supported
		}
		return m
	}
	prev, cur := releasedAndCurrentCSV(t)
	if p := supported(prev); !p["OwnNamespace"] || !p["AllNamespaces"] {
		t.Errorf("released install modes %v, want OwnNamespace and AllNamespaces", prev.InstallModes)
	}
	if c := supported(cur); !c["AllNamespaces"] || c["OwnNamespace"] || c["SingleNamespace"] {
		t.Errorf("current install modes %v, want AllNamespaces only", cur.InstallModes)
	}
}
