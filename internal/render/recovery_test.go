package render

import (
	"reflect"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// recoveringMember is the first member of a recovered cluster as the controller asks for it.
func recoveringMember(c *v1beta2.EtcdCluster, token string) Member {
	const name = "example-r1"
	return Member{Name: name, InitialClusterState: StateNew,
		InitialCluster: InitialClusterEntry(c, name, "cluster.local"),
		Recovery:       &Recovery{SourceURL: "http://10.1.2.3:2379", MinRevision: 4242, Token: token, Image: "etcd-operator:v0.2.0"}}
}

func TestRecoveryInitContainer(t *testing.T) {
	c := coreosSample("3.6.16")
	m := recoveringMember(c, ClusterToken(c)+"-r1")
	// A restore annotation on the cluster (it was once created from a backup) must not
	// make the recovering member restore that old backup instead of the survivor's data.
	s3 := v1beta2.S3BackupSource{Path: "bucket/db", AWSSecret: "aws"}
	src := RestoreSource{Restore: "r", S3: &s3}
	ann, err := src.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	c.Annotations = ann
	step := &RestoreStep{Source: src, Image: "etcd-operator:v0.1.0"}
	got := mustRender(t, Input{Cluster: c, ClusterDomain: "cluster.local", Members: []Member{m}, Restore: step})
	p := got.pods[m.Name]
	if len(p.Spec.InitContainers) != 1 {
		t.Fatalf("init containers %+v", p.Spec.InitContainers)
	}
	ic := p.Spec.InitContainers[0]
	wantArgs := []string{
		"--from-member=http://10.1.2.3:2379",
		"--min-revision=4242",
		"--name=" + m.Name,
		"--data-dir=" + DataDir,
		"--initial-advertise-peer-urls=" + PeerURL(c, m.Name, "cluster.local"),
		"--initial-cluster=" + m.InitialCluster,
		"--initial-cluster-token=" + m.Recovery.Token,
	}
	if ic.Image != "etcd-operator:v0.2.0" || !reflect.DeepEqual(ic.Command, []string{OperatorCommand, "restore"}) || !reflect.DeepEqual(ic.Args, wantArgs) {
		t.Errorf("init container image %s command %v args\n%s\nwant\n%s", ic.Image, ic.Command, strings.Join(ic.Args, "\n"), strings.Join(wantArgs, "\n"))
	}
	if len(ic.VolumeMounts) != 1 || ic.VolumeMounts[0].Name != "etcd-data" {
		t.Errorf("init container mounts %+v: want only the data volume (no backup secret)", ic.VolumeMounts)
	}
	if tok, _ := flag(t, etcdContainer(t, p).Args, "initial-cluster-token"); tok != m.Recovery.Token {
		t.Errorf("etcd --initial-cluster-token=%s, want the recovery token %s", tok, m.Recovery.Token)
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == RestoreAWSVolumeName {
			t.Errorf("recovering member mounts the restore backup secret")
		}
	}
}

func TestRecoveryWithClientTLSMountsOperatorSecret(t *testing.T) {
	c := tlsCluster("peer", "server")
	m := recoveringMember(c, "new-token")
	got := mustRender(t, Input{Cluster: c, ClusterDomain: "cluster.local", Members: []Member{m}})
	p := got.pods[m.Name]
	ic := p.Spec.InitContainers[0]
	if v, ok := flag(t, ic.Args, "client-tls-dir"); !ok || v != "/etc/etcd-operator/client-tls" {
		t.Errorf("--client-tls-dir=%q (%v)", v, ok)
	}
	found := false
	for _, v := range p.Spec.Volumes {
		if v.Name == "recover-client-tls" && v.Secret != nil && v.Secret.SecretName == c.Spec.TLS.Static.OperatorSecret {
			found = true
		}
	}
	if !found {
		t.Errorf("no volume for the operator's client secret %q: %+v", c.Spec.TLS.Static.OperatorSecret, p.Spec.Volumes)
	}
}

func TestRecoveryInputErrors(t *testing.T) {
	c := coreosSample("3.6.16")
	for name, mutate := range map[string]func(m *Member){
		"joins an existing cluster":    func(m *Member) { m.InitialClusterState = StateExisting },
		"old token":                    func(m *Member) { m.Recovery.Token = ClusterToken(c) },
		"no token":                     func(m *Member) { m.Recovery.Token = "" },
		"no source":                    func(m *Member) { m.Recovery.SourceURL = "" },
		"no image":                     func(m *Member) { m.Recovery.Image = " " },
		"IPv6 source without brackets": func(m *Member) { m.Recovery.SourceURL = "http://fd00::5:2379" },
		"source not a URL":             func(m *Member) { m.Recovery.SourceURL = "10.1.2.3:2379" },
	} {
		t.Run(name, func(t *testing.T) {
			m := recoveringMember(c, "new-token")
			mutate(&m)
			if _, err := New(); err != nil {
				t.Fatal(err)
			}
			if _, err := Values(Input{Cluster: c, ClusterDomain: "cluster.local", Members: []Member{m}}); err == nil || !strings.Contains(err.Error(), m.Name) {
				t.Errorf("Values: %v, want an error naming the member", err)
			}
		})
	}
}
