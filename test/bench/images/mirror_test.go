package images

import "testing"

func TestMirrorRefKeepsTheRepositoryPath(t *testing.T) {
	const reg = "10.200.0.1:5000"
	for _, c := range []struct{ image, ref string }{
		{"quay.io/coreos/etcd:v3.6.16", reg + "/coreos/etcd:v3.6.16"},
		{"etcd-operator:v0.2.0", reg + "/library/etcd-operator:v0.2.0"},
		{"someone/tool:1", reg + "/someone/tool:1"},
		{"bench.local/pause:3.10", reg + "/pause:3.10"},
		{"registry.example:5000/a/b/c:t", reg + "/a/b/c:t"},
		{"quay.io/coreos/etcd", reg + "/coreos/etcd:latest"},
		{
			"quay.io/coreos/etcd@sha256:" + sixtyFourHex,
			reg + "/coreos/etcd@sha256:" + sixtyFourHex,
		},
	} {
		got, err := MirrorRef(reg, c.image)
		if err != nil || got != c.ref {
			t.Errorf("MirrorRef(%q) = %q, %v; want %q", c.image, got, err, c.ref)
		}
	}
	for _, bad := range []string{"", "UPPER/case:1", "a:b:c"} {
		if got, err := MirrorRef(reg, bad); err == nil {
			t.Errorf("MirrorRef(%q) = %q, want an error", bad, got)
		}
	}
}

const sixtyFourHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
