package olmimage

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// splitDocs parses a YAML stream of Render's output.
func splitDocs(t *testing.T, fbc []byte) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, part := range bytes.Split(fbc, []byte("---\n")) {
		if len(bytes.TrimSpace(part)) == 0 {
			continue
		}
		var d map[string]any
		if err := yaml.Unmarshal(part, &d); err != nil {
			t.Fatalf("%v in\n%s", err, part)
		}
		docs = append(docs, d)
	}
	return docs
}

func TestRenderMakesTheAlphaUpgradeChannel(t *testing.T) {
	opm := filepath.Join(opmDir(t), "opm")
	pkg, fbc, err := Render(opm, Catalog{Channel: "alpha", Bundles: []Bundle{
		{Dir: releasedBundle, Image: "example.test/etcd-operator-bundle:v0.1.0"},
		{Dir: currentBundle, Image: "example.test/etcd-operator-bundle:v0.2.0"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if pkg != "etcd-operator" {
		t.Errorf("package %q", pkg)
	}
	docs := splitDocs(t, fbc)
	if len(docs) != 4 {
		t.Fatalf("%d documents, want package, channel and two bundles:\n%s", len(docs), fbc)
	}
	if docs[0]["schema"] != "olm.package" || docs[0]["defaultChannel"] != "alpha" {
		t.Errorf("package document %v", docs[0])
	}
	ch := docs[1]
	entries, _ := ch["entries"].([]any)
	if ch["schema"] != "olm.channel" || ch["name"] != "alpha" || len(entries) != 2 {
		t.Fatalf("channel document %v", ch)
	}
	first, second := entries[0].(map[string]any), entries[1].(map[string]any)
	if first["name"] != "etcd-operator.v0.1.0" || first["replaces"] != nil {
		t.Errorf("first entry %v, want 0.1.0 replacing nothing", first)
	}
	if second["name"] != "etcd-operator.v0.2.0" || second["replaces"] != "etcd-operator.v0.1.0" {
		t.Errorf("second entry %v, want 0.2.0 replacing 0.1.0", second)
	}
	for i, want := range []string{"example.test/etcd-operator-bundle:v0.1.0", "example.test/etcd-operator-bundle:v0.2.0"} {
		b := docs[2+i]
		if b["schema"] != "olm.bundle" || b["image"] != want {
			t.Errorf("bundle %d: schema %v image %v, want %s", i, b["schema"], b["image"], want)
		}
	}
}

func TestRenderRefusesWhatOLMCouldNotInstall(t *testing.T) {
	opm := filepath.Join(opmDir(t), "opm")
	for name, tc := range map[string]struct {
		c    Catalog
		want string
	}{
		"no image":      {Catalog{Channel: "alpha", Bundles: []Bundle{{Dir: currentBundle}}}, "no image"},
		"other channel": {Catalog{Channel: "stable", Bundles: []Bundle{{Dir: currentBundle, Image: "x:1"}}}, "not in channel"},
		"twice": {Catalog{Channel: "alpha", Bundles: []Bundle{
			{Dir: currentBundle, Image: "x:1"}, {Dir: currentBundle, Image: "x:2"}}}, "twice"},
		"empty": {Catalog{Channel: "alpha"}, "at least one bundle"},
	} {
		if _, _, err := Render(opm, tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one saying %q", name, err, tc.want)
		}
	}
}
