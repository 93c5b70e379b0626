package pinsign

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

var testKey = bytes.Repeat([]byte{7}, 32)

func signed() Facts {
	return Facts{Namespace: "team-a", Backup: "nightly", BackupUID: "0b5c-uid", Bucket: "backups",
		Endpoint: "http://minio:9000", Key: "prod/nightly.db_v42_2026-12-04-10:00:00", SHA256: strings.Repeat("ab", 32), Revision: 42}
}

// TestVerify: a signature verifies for exactly the facts it was made for, under the
// key it was made with; every field changed on its own breaks it.
func TestVerify(t *testing.T) {
	sig := Sign(testKey, signed())
	if len(sig) != 64 {
		t.Fatalf("signature %q is not 32 bytes of hex", sig)
	}
	for _, tc := range []struct {
		name string
		edit func(*Facts)
		key  []byte
		sig  string
		ok   bool
	}{
		{name: "the facts signed", ok: true},
		{name: "sha256 in upper case", edit: func(f *Facts) { f.SHA256 = strings.ToUpper(f.SHA256) }, ok: true},
		{name: "another namespace", edit: func(f *Facts) { f.Namespace = "team-b" }},
		{name: "another backup name", edit: func(f *Facts) { f.Backup = "nightly2" }},
		{name: "a recreated backup (another uid)", edit: func(f *Facts) { f.BackupUID = "0b5c-uid2" }},
		{name: "another bucket", edit: func(f *Facts) { f.Bucket = "backups2" }},
		{name: "another endpoint", edit: func(f *Facts) { f.Endpoint = "http://evil:9000" }},
		{name: "a claim instead", edit: func(f *Facts) { f.Claim = "data" }},
		{name: "another key", edit: func(f *Facts) { f.Key = "prod/nightly.db_v43_2026-12-04-11:00:00" }},
		{name: "another sha256", edit: func(f *Facts) { f.SHA256 = strings.Repeat("ab", 31) + "ac" }},
		{name: "another revision", edit: func(f *Facts) { f.Revision = 43 }},
		{name: "another key of the operator", key: bytes.Repeat([]byte{8}, 32)},
		{name: "no key", key: []byte{}},
		{name: "no signature", sig: "-"},
		{name: "not hex", sig: strings.Repeat("zz", 32)},
		{name: "truncated", sig: sig[:62]},
		{name: "one bit flipped", sig: flipLast(sig)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := signed()
			if tc.edit != nil {
				tc.edit(&f)
			}
			key, s := testKey, sig
			if tc.key != nil {
				key = tc.key
			}
			switch tc.sig {
			case "-":
				s = ""
			case "":
			default:
				s = tc.sig
			}
			if got := Verify(key, f, s); got != tc.ok {
				t.Fatalf("Verify = %v, want %v", got, tc.ok)
			}
		})
	}
}

// TestSignNamespaces: a signature made for namespace A never verifies in namespace B,
// even for an EtcdBackup and object of the same names there.
func TestSignNamespaces(t *testing.T) {
	a := signed()
	b := a
	b.Namespace = "team-b"
	sigA := Sign(testKey, a)
	if Verify(testKey, b, sigA) {
		t.Fatal("namespace A's signature verifies in namespace B")
	}
	if Sign(testKey, b) == sigA {
		t.Fatal("both namespaces sign alike")
	}
}

// TestEncodingUnambiguous: moving characters from one field to its neighbour changes the
// signature (fields are length-prefixed, not just joined).
func TestEncodingUnambiguous(t *testing.T) {
	a, b := signed(), signed()
	a.Bucket, a.Key = "backups/prod", "nightly.db"
	b.Bucket, b.Key = "backups", "prod/nightly.db"
	if Sign(testKey, a) == Sign(testKey, b) {
		t.Fatal("bucket/key split differently signs alike")
	}
	c, d := signed(), signed()
	c.Namespace, c.Backup = "team-an", "ightly"
	d.Namespace, d.Backup = "team-a", "nightly"
	if Sign(testKey, c) == Sign(testKey, d) {
		t.Fatal("namespace/backup split differently signs alike")
	}
}

// TestSignWithoutKey: without the operator's key nothing is signed.
func TestSignWithoutKey(t *testing.T) {
	if s := Sign(nil, signed()); s != "" {
		t.Fatalf("signed %q without a key", s)
	}
}

func flipLast(sig string) string {
	last := sig[len(sig)-1]
	repl := byte('0')
	if last == '0' {
		repl = '1'
	}
	return sig[:len(sig)-1] + string(repl)
}

// BackupFacts names an EtcdBackup's storage as its spec does: bucket and endpoint on S3,
// the claim on a PVC.
func TestBackupFacts(t *testing.T) {
	eb := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "u"},
		Spec: etcdv1beta2.EtcdBackupSpec{StorageType: etcdv1beta2.BackupStorageTypeS3, BackupSource: etcdv1beta2.BackupSource{
			S3: &etcdv1beta2.S3BackupSource{Path: "bucket/prefix/db", Endpoint: "http://minio:9000"}}}}
	want := Facts{Namespace: "ns", Backup: "b", BackupUID: "u", Bucket: "bucket", Endpoint: "http://minio:9000", Key: "prefix/db_v3", SHA256: "s", Revision: 3}
	if got := BackupFacts(eb, "prefix/db_v3", "s", 3); got != want {
		t.Errorf("S3: %+v, want %+v", got, want)
	}
	eb.Spec.StorageType, eb.Spec.S3 = etcdv1beta2.BackupStorageTypePVC, nil
	eb.Spec.PVC = &etcdv1beta2.PVCBackupSource{ClaimName: "claim", Path: "db"}
	want = Facts{Namespace: "ns", Backup: "b", BackupUID: "u", Claim: "claim", Key: "db", SHA256: "s", Revision: 3}
	if got := BackupFacts(eb, "db", "s", 3); got != want {
		t.Errorf("PVC: %+v, want %+v", got, want)
	}
}
