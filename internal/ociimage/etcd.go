package ociimage

import "path/filepath"

// EtcdBinDir is where etcd's release images keep etcd, etcdctl and etcdutl, so that
// `kubectl exec <member> -- etcdctl ...` finds them on PATH as it does on a real image.
const EtcdBinDir = "/usr/local/bin"

// EtcdSpec is an etcd image in the layout of etcd's release images, from a directory
// holding one version's etcd, etcdctl and etcdutl (the tool cache's etcd-vX.Y.Z/).
// The member pods name the command themselves (the chart runs /usr/local/bin/etcd).
func EtcdSpec(binDir string) Spec {
	files := []File{{Path: "/var/etcd", Dir: true, Mode: 0o700, UID: 65532, GID: 65532}}
	for _, tool := range []string{"etcd", "etcdctl", "etcdutl"} {
		files = append(files, File{Path: EtcdBinDir + "/" + tool, Source: filepath.Join(binDir, tool), Mode: 0o755})
	}
	return Spec{
		Files: files,
		Env:   []string{"PATH=" + EtcdBinDir + ":/usr/bin:/bin"},
		Cmd:   []string{EtcdBinDir + "/etcd"},
	}
}
