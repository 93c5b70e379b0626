package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/kubectletcd"
)

// TestKubectlEtcd runs every `kubectl etcd` subcommand, as a user would (kubeconfig,
// namespace and output flags), against a 3-member cluster with a periodic S3 EtcdBackup
// in MinIO: status and member list show the three members with one leader and the
// backup; backup runs backup-now and waits for it, and takes a one-shot; defrag defragments every member,
// the leader last; restore creates an EtcdRestore that the operator completes into a
// new cluster holding the keys; report writes a bundle with the objects, events, logs
// and etcdctl's endpoint status of each member, and no Secret data.
func TestKubectlEtcd(t *testing.T) {
	const cluster, keys, backupName, restored = "kp", 50, "kp-s3", "kp-copy"
	b := setupBackup(t, cluster, keys)
	eb := b.newBackup(backupName, cluster, "kp/periodic", "aws", &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 3600})
	eb.Spec.EtcdEndpoints, eb.Spec.ClusterRef = nil, &etcdv1beta2.EtcdClusterRef{Name: cluster}
	b.Create(eb)
	first := b.waitCondition(t, backupName, metav1.ConditionTrue, etcdv1beta2.ReasonBackupSucceeded, 90*time.Second)

	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := kubectletcd.NewCommand(kubectletcd.Connect, &out, &errOut)
		cmd.SetArgs(append([]string{"--kubeconfig", b.Bench.Kubeconfig(), "-n", "default"}, args...))
		start := time.Now()
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("kubectl etcd %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		t.Logf("kubectl etcd %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out.String())
		return out.String()
	}
	decode := func(s string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(s), v); err != nil {
			t.Fatalf("output %q: %v", s, err)
		}
	}

	// status, as a table and as JSON; the operator refreshes details on its own, so
	// the JSON is polled until all three are healthy.
	screen := run("status", cluster)
	for _, want := range []string{"Members:", "Alarms:    none", "Backups:", backupName, "s3://" + backupBucket + "/kp/periodic", "Conditions:", "Available"} {
		if !strings.Contains(screen, want) {
			t.Errorf("status screen lacks %q", want)
		}
	}
	var st kubectletcd.ClusterStatus
	b.Eventually(60*time.Second, "status shows 3 healthy members, one leader", func() error {
		decode(run("status", cluster, "-o", "json"), &st)
		leaders := 0
		for _, m := range st.Members {
			if !m.Healthy || !m.PodReady || m.Version == "" || m.DBSize == "" || m.ID == "" {
				return fmt.Errorf("member %+v", m)
			}
			if m.Role == string(etcdv1beta2.MemberRoleLeader) {
				leaders++
			}
		}
		if len(st.Members) != 3 || leaders != 1 || st.Leader == "" {
			return fmt.Errorf("%d members, %d leaders, leader %q", len(st.Members), leaders, st.Leader)
		}
		return nil
	})
	if len(st.Backups) != 1 || st.Backups[0].Name != backupName || !st.Backups[0].Succeeded || st.Backups[0].LastSuccess == nil ||
		st.Backups[0].Revision != first.Status.EtcdRevision {
		t.Errorf("status backups %+v, want %s at revision %d", st.Backups, backupName, first.Status.EtcdRevision)
	}

	var members []kubectletcd.Member
	decode(run("member", "list", cluster, "-o", "json"), &members)
	if len(members) != 3 {
		t.Fatalf("member list: %+v", members)
	}
	for _, m := range members {
		if m.Pod != m.Name || m.PodPhase != "Running" || m.Node == "" || !m.InEtcd {
			t.Errorf("member list entry %+v", m)
		}
	}

	// backup: backup-now on the cluster's one EtcdBackup, waited for.
	writeKeys(b.Env, b.EtcdClient(cluster), 5, "/after-first-backup", "x")
	var br kubectletcd.BackupResult
	decode(run("backup", cluster, "--wait", "--timeout", "2m", "-o", "json"), &br)
	if br.Backup != backupName || br.Action != "backup-now" || !br.Succeeded || br.Revision <= first.Status.EtcdRevision {
		t.Errorf("backup result %+v, want a backup-now of %s past revision %d", br, backupName, first.Status.EtcdRevision)
	}
	if got := b.getBackup(t, backupName).Status.LastBackupNow; got != br.BackupNow {
		t.Errorf("status.lastBackupNow %q, want %q", got, br.BackupNow)
	}

	// backup --one-shot: a new one-shot EtcdBackup beside the periodic one's objects.
	var one kubectletcd.BackupResult
	decode(run("backup", cluster, "--one-shot", "--wait", "--timeout", "2m", "-o", "json"), &one)
	if one.Action != "created" || !one.Succeeded || one.Revision < br.Revision ||
		!strings.HasPrefix(one.Storage, "s3://"+backupBucket+"/kp/periodic-manual-") {
		t.Errorf("one-shot result %+v", one)
	}
	if got := b.getBackup(t, one.Backup); got.Spec.ClusterRef == nil || got.Spec.ClusterRef.Name != cluster || got.Spec.BackupPolicy != nil {
		t.Errorf("one-shot EtcdBackup spec %+v", got.Spec)
	}

	// defrag: every member, the leader last.
	var dr []kubectletcd.DefragResult
	decode(run("defrag", cluster, "-o", "json"), &dr)
	if len(dr) != 3 {
		t.Fatalf("defrag results %+v", dr)
	}
	for i, r := range dr {
		if r.Error != "" || r.DBSizeAfter <= 0 {
			t.Errorf("defrag of %s: %+v", r.Member, r)
		}
		if isLeader := r.Role == string(etcdv1beta2.MemberRoleLeader); isLeader != (i == len(dr)-1) {
			t.Errorf("defrag order %+v: the leader goes last", dr)
		}
	}

	// restore: the newest backup at or before now, into a new one-member cluster.
	var rr kubectletcd.RestoreResult
	decode(run("restore", restored, "--from", backupName, "--at", time.Now().UTC().Format(time.RFC3339), "--size", "1",
		"--wait", "--timeout", "4m", "-o", "json"), &rr)
	if !rr.Succeeded || rr.Revision != br.Revision {
		t.Errorf("restore result %+v, want the backup-now backup at revision %d", rr, br.Revision)
	}
	b.WaitAvailable(restored, 1, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := b.EtcdClient(restored).Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != keys+5 {
		t.Errorf("restored cluster holds %d keys, want %d", resp.Count, keys+5)
	}

	// report: a tarball with what support needs, and no Secret data.
	path := filepath.Join(t.TempDir(), "report.tar.gz")
	run("report", cluster, "-f", path)
	files := readTarGz(t, path)
	var podNames []string
	for _, m := range members {
		podNames = append(podNames, m.Name)
	}
	want := []string{"status.txt", "status.yaml", "etcdcluster.yaml", "etcdbackups.yaml", "etcdrestores.yaml", "pods.yaml",
		"services.yaml", "events.yaml", "secrets.txt", "errors.txt"}
	for _, p := range podNames {
		want = append(want, "logs/members/"+p+".etcd.log", "etcdctl/"+p+".endpoint-status.json", "etcdctl/"+p+".alarm-list.txt")
	}
	for _, w := range want {
		if _, ok := files[w]; !ok {
			t.Errorf("report lacks %s (has %v)", w, keysOf(files))
		}
	}
	for _, p := range podNames {
		var eps []struct {
			Status struct {
				DBSize int64 `json:"dbSize"`
			}
		}
		if err := json.Unmarshal(files["etcdctl/"+p+".endpoint-status.json"], &eps); err != nil || len(eps) != 1 || eps[0].Status.DBSize <= 0 {
			t.Errorf("endpoint status of %s: %s (%v)", p, files["etcdctl/"+p+".endpoint-status.json"], err)
		}
		if len(files["logs/members/"+p+".etcd.log"]) == 0 {
			t.Errorf("empty log of %s", p)
		}
	}
	if !bytes.Contains(files["etcdrestores.yaml"], []byte(rr.Restore)) || !bytes.Contains(files["etcdbackups.yaml"], []byte(backupName)) {
		t.Errorf("report lacks the restore %s or the backup %s", rr.Restore, backupName)
	}
	if !bytes.Contains(files["secrets.txt"], []byte("aws\texists")) {
		t.Errorf("secrets.txt does not list the aws Secret:\n%s", files["secrets.txt"])
	}
	for name, data := range files {
		for _, secret := range []string{b.minio.SecretKey, b.minio.AccessKey} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("report file %s holds Secret data", name)
			}
		}
	}
}

func readTarGz(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		// Names are <bundle>/<file>.
		_, rel, _ := strings.Cut(h.Name, "/")
		files[rel] = data
	}
	return files
}

func keysOf(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
