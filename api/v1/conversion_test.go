package v1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// fromYAML decodes a manifest into obj, failing the test on unknown fields so a renamed
// JSON name in the expectations cannot pass unnoticed.
func fromYAML(t *testing.T, doc string, obj any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
}

// jsonEqualYAML compares obj's JSON with an expected manifest, as maps.
func jsonEqualYAML(t *testing.T, obj any, want string) {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var got, exp map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatal(err)
	}
	// The conversion annotation is compared as decoded JSON, not as text.
	for _, m := range []map[string]any{got, exp} {
		md, _ := m["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if s, ok := ann[ConversionDataAnnotation].(string); ok {
			var v any
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				t.Fatalf("annotation is not JSON: %v", err)
			}
			ann[ConversionDataAnnotation] = v
		}
	}
	if d := cmp.Diff(exp, got); d != "" {
		t.Errorf("converted object differs (-want +got):\n%s", d)
	}
}

const coreosCluster = `
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata:
  name: example
  namespace: prod
  annotations: {team: storage}
spec:
  size: 3
  version: 3.6.16
  repository: etcd-mirror/etcd
  pod:
    antiAffinity: true
    busyboxImage: busybox:1.28.0-glibc
    DNSTimeoutInSecond: 60
    ClusterDomain: cluster.local
    labels: {tier: db}
    etcdEnv:
    - {name: ETCD_QUOTA_BACKEND_BYTES, value: "4294967296"}
  TLS:
    static:
      member: {peerSecret: peer, serverSecret: server}
      operatorSecret: client
status:
  phase: Running
  size: 3
  serviceName: example-client
  clientPort: 2379
  members: {ready: [example-0, example-1, example-2]}
  currentVersion: 3.6.16
  targetVersion: ""
  conditions:
  - type: Available
    status: "True"
    lastUpdateTime: "2024-05-01T10:00:05Z"
    lastTransitionTime: "2024-05-01T10:00:00Z"
    reason: AllMembersReady
    message: 3 of 3 members ready
  - type: Upgrading
    status: "False"
    lastTransitionTime: "2024-05-01T12:00:00+02:00"
    reason: Done
    message: ""
`

func TestEtcdClusterFieldMapping(t *testing.T) {
	var hub v1beta2.EtcdCluster
	fromYAML(t, coreosCluster, &hub)
	var v1 EtcdCluster
	if err := v1.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	// Typed checks of what matters most, then the whole object as JSON.
	if v1.Spec.Pod.DNSTimeout == nil || v1.Spec.Pod.DNSTimeout.Duration != time.Minute {
		t.Errorf("dnsTimeout = %v, want 1m", v1.Spec.Pod.DNSTimeout)
	}
	if c := v1.Status.Conditions[1]; !c.LastTransitionTime.Time.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("an RFC 3339 time with an offset read as %v", c.LastTransitionTime)
	}
	jsonEqualYAML(t, &v1, `
metadata:
  name: example
  namespace: prod
  annotations:
    team: storage
    etcd.database.coreos.com/v1-conversion-data:
      busyboxImage: busybox:1.28.0-glibc
      conditions:
      - {index: 0, type: Available, lastUpdateTime: "2024-05-01T10:00:05Z"}
      - {index: 1, type: Upgrading, lastTransitionTime: "2024-05-01T12:00:00+02:00", rawTransitionTime: true}
spec:
  size: 3
  version: 3.6.16
  repository: etcd-mirror/etcd
  pod:
    antiAffinity: true
    dnsTimeout: 1m0s
    clusterDomain: cluster.local
    labels: {tier: db}
    env:
    - {name: ETCD_QUOTA_BACKEND_BYTES, value: "4294967296"}
    resources: {}
  tls:
    static:
      member: {peerSecret: peer, serverSecret: server}
      operatorSecret: client
status:
  phase: Running
  size: 3
  serviceName: example-client
  clientPort: 2379
  members: {ready: [example-0, example-1, example-2]}
  currentVersion: 3.6.16
  targetVersion: ""
  conditions:
  - {type: Available, status: "True", lastTransitionTime: "2024-05-01T10:00:00Z", reason: AllMembersReady, message: 3 of 3 members ready}
  - {type: Upgrading, status: "False", lastTransitionTime: "2024-05-01T10:00:00Z", reason: Done, message: ""}
`)

	var back v1beta2.EtcdCluster
	if err := v1.ConvertTo(&back); err != nil {
		t.Fatal(err)
	}
	hub.TypeMeta = metav1.TypeMeta{}
	if !equality.Semantic.DeepEqual(&hub, &back) {
		t.Errorf("round trip changed the object:\n%s", cmp.Diff(&hub, &back))
	}
}

func TestEtcdClusterV1OnlyValues(t *testing.T) {
	var v1 EtcdCluster
	fromYAML(t, `
metadata: {name: x}
spec:
  size: 1
  pod: {dnsTimeout: 2.5s, env: [{name: A, value: b}]}
status:
  conditions:
  - {type: Available, status: "True", observedGeneration: 4, lastTransitionTime: "2024-05-01T10:00:00Z", reason: R, message: M}
`, &v1)
	var hub v1beta2.EtcdCluster
	if err := v1.ConvertTo(&hub); err != nil {
		t.Fatal(err)
	}
	jsonEqualYAML(t, &hub, `
metadata:
  name: x
  annotations:
    etcd.database.coreos.com/v1-conversion-data:
      dnsTimeout: 2.5s
      conditions: [{index: 0, type: Available, observedGeneration: 4}]
spec:
  size: 1
  pod:
    DNSTimeoutInSecond: 2
    etcdEnv: [{name: A, value: b}]
    resources: {}
status:
  phase: ""
  size: 0
  members: {}
  currentVersion: ""
  targetVersion: ""
  conditions:
  - {type: Available, status: "True", lastTransitionTime: "2024-05-01T10:00:00Z", reason: R, message: M}
`)

	// An edit made through v1beta2 wins over the kept v1 value: 2.5s is kept only while
	// the seconds are still 2.
	hub.Spec.Pod.DNSTimeoutInSecond = 30
	var edited EtcdCluster
	if err := edited.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if got := edited.Spec.Pod.DNSTimeout; got == nil || got.Duration != 30*time.Second {
		t.Errorf("after a v1beta2 edit dnsTimeout = %v, want 30s", got)
	}
	if _, ok := edited.Annotations[ConversionDataAnnotation]; ok {
		t.Errorf("nothing is left to keep, yet the annotation is set: %v", edited.Annotations)
	}
	if edited.Status.Conditions[0].ObservedGeneration != 4 {
		t.Errorf("observedGeneration not restored: %+v", edited.Status.Conditions[0])
	}

	// A condition replaced through v1beta2 (another type at that position) does not
	// inherit the kept observedGeneration.
	hub.Status.Conditions[0].Type = v1beta2.ClusterConditionScaling
	if err := edited.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if edited.Status.Conditions[0].ObservedGeneration != 0 {
		t.Errorf("a different condition got the kept observedGeneration: %+v", edited.Status.Conditions[0])
	}
}

func TestEtcdBackupFieldMapping(t *testing.T) {
	var hub v1beta2.EtcdBackup
	fromYAML(t, `
metadata: {name: nightly, namespace: prod}
spec:
  etcdEndpoints: ["https://example-client.prod.svc:2379"]
  storageType: S3
  clientTLSSecret: client
  backupPolicy: {timeoutInSecond: 90, backupIntervalInSecond: 86400, maxBackups: 7}
  s3: {path: bucket/etcd/example, awsSecret: aws, endpoint: "https://minio:9000", forcePathStyle: true}
status:
  succeeded: true
  Reason: ""
  etcdVersion: 3.6.16
  etcdRevision: 42
  lastSuccessDate: "2024-05-01T10:00:00Z"
`, &hub)
	var v1 EtcdBackup
	if err := v1.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	jsonEqualYAML(t, &v1, `
metadata: {name: nightly, namespace: prod}
spec:
  etcdEndpoints: ["https://example-client.prod.svc:2379"]
  storageType: S3
  clientTLSSecret: client
  backupPolicy: {timeout: 1m30s, backupInterval: 24h0m0s, maxBackups: 7}
  s3: {path: bucket/etcd/example, credentialsSecret: aws, endpoint: "https://minio:9000", forcePathStyle: true}
status:
  succeeded: true
  etcdVersion: 3.6.16
  etcdRevision: 42
  lastSuccessTime: "2024-05-01T10:00:00Z"
`)
	var back v1beta2.EtcdBackup
	if err := v1.ConvertTo(&back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(&hub, &back) {
		t.Errorf("round trip changed the object:\n%s", cmp.Diff(&hub, &back))
	}

	// Seconds beyond a Go duration's range show as the largest duration in v1 and
	// come back exactly.
	hub.Spec.BackupPolicy.BackupIntervalInSecond = 1 << 62
	if err := v1.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if d := v1.Spec.BackupPolicy.BackupInterval.Duration; d != time.Duration(1<<63-1) {
		t.Errorf("out-of-range seconds became %v", d)
	}
	if err := v1.ConvertTo(&back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.BackupPolicy.BackupIntervalInSecond != 1<<62 {
		t.Errorf("out-of-range seconds came back as %d", back.Spec.BackupPolicy.BackupIntervalInSecond)
	}
}

func TestEtcdRestoreFieldMapping(t *testing.T) {
	var v1 EtcdRestore
	fromYAML(t, `
metadata: {name: r}
spec:
  etcdCluster: {name: example}
  storageType: PVC
  pvc: {claimName: backups, path: snap.db}
  s3: {path: b/k, credentialsSecret: "", credentialsSource: Environment, encryptionKeySecret: backup-key}
`, &v1)
	var hub v1beta2.EtcdRestore
	if err := v1.ConvertTo(&hub); err != nil {
		t.Fatal(err)
	}
	jsonEqualYAML(t, &hub, `
metadata: {name: r}
spec:
  etcdCluster: {name: example}
  backupStorageType: PVC
  pvc: {claimName: backups, path: snap.db}
  s3: {path: b/k, awsSecret: "", credentialsSource: Environment, encryptionKeySecret: backup-key}
status: {succeeded: false}
`)
	var back EtcdRestore
	if err := back.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(&v1, &back) {
		t.Errorf("round trip changed the object:\n%s", cmp.Diff(&v1, &back))
	}
}

func TestMalformedConversionDataIsAnError(t *testing.T) {
	hub := v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{
		Name:        "x",
		Annotations: map[string]string{ConversionDataAnnotation: "{not json"},
	}}
	var v1 EtcdCluster
	err := v1.ConvertFrom(&hub)
	if err == nil || !strings.Contains(err.Error(), ConversionDataAnnotation) {
		t.Fatalf("want an error naming the annotation, got %v", err)
	}
}

// TestBackupCompression: v1's spec.compression is v1beta2's compression annotation, and
// every combination of field and annotation survives a round trip from either side.
func TestBackupCompression(t *testing.T) {
	const key = v1beta2.BackupCompressionAnnotation
	v1Cases := map[string]*EtcdBackup{
		"field only":           {Spec: EtcdBackupSpec{Compression: BackupCompressionGzip}},
		"annotation only":      {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: "gzip"}}},
		"field and annotation": {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: "none"}}, Spec: EtcdBackupSpec{Compression: BackupCompressionGzip}},
		"empty annotation":     {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: "", "x": "y"}}},
		"neither":              {},
	}
	for name, orig := range v1Cases {
		t.Run("v1 "+name, func(t *testing.T) {
			var hub v1beta2.EtcdBackup
			if err := orig.DeepCopy().ConvertTo(&hub); err != nil {
				t.Fatal(err)
			}
			if orig.Spec.Compression != "" && hub.Annotations[key] != string(orig.Spec.Compression) {
				t.Errorf("v1beta2 annotation %q, want spec.compression %q (the controller reads the annotation)", hub.Annotations[key], orig.Spec.Compression)
			}
			var back EtcdBackup
			if err := back.ConvertFrom(&hub); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(orig, &back) {
				t.Errorf("round trip changed it:\n got %+v %+v\nwant %+v %+v", back.Annotations, back.Spec, orig.Annotations, orig.Spec)
			}
		})
	}
	hubCases := map[string]*v1beta2.EtcdBackup{
		"gzip":  {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: "gzip"}}},
		"bogus": {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: "zstd", "x": "y"}}},
		"empty": {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: ""}}},
	}
	for name, orig := range hubCases {
		t.Run("v1beta2 "+name, func(t *testing.T) {
			var v EtcdBackup
			if err := v.ConvertFrom(orig.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			if want := orig.Annotations[key]; want != "" && (string(v.Spec.Compression) != want || v.Annotations[key] != "") {
				t.Errorf("v1 spec.compression %q annotations %v, want the field %q and no annotation", v.Spec.Compression, v.Annotations, want)
			}
			var back v1beta2.EtcdBackup
			if err := v.ConvertTo(&back); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(orig, &back) {
				t.Errorf("round trip changed it: got %v, want %v", back.Annotations, orig.Annotations)
			}
		})
	}
}

// TestEtcdBackupClusterRef: spec.clusterRef is the same field in both versions.
func TestEtcdBackupClusterRef(t *testing.T) {
	var hub v1beta2.EtcdBackup
	fromYAML(t, `
metadata: {name: b, namespace: prod}
spec: {clusterRef: {name: example}, storageType: S3, s3: {path: bucket/k, awsSecret: aws}}
`, &hub)
	var v1 EtcdBackup
	if err := v1.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if v1.Spec.ClusterRef == nil || v1.Spec.ClusterRef.Name != "example" || v1.Annotations != nil {
		t.Fatalf("v1 clusterRef %+v, annotations %v", v1.Spec.ClusterRef, v1.Annotations)
	}
	var back v1beta2.EtcdBackup
	if err := v1.ConvertTo(&back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(&hub, &back) {
		t.Errorf("round trip changed the object:\n%s", cmp.Diff(&hub, &back))
	}
}

// v1's schedule and time zone are v1beta2's annotations, and back.
func TestBackupScheduleIsTheV1beta2Annotation(t *testing.T) {
	src := &EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
		Spec:       EtcdBackupSpec{BackupPolicy: &BackupPolicy{Schedule: "0 2 * * *", TimeZone: "Europe/Berlin", MaxBackups: 7}},
	}
	var hub v1beta2.EtcdBackup
	if err := src.ConvertTo(&hub); err != nil {
		t.Fatal(err)
	}
	if a := hub.Annotations; a[v1beta2.BackupScheduleAnnotation] != "0 2 * * *" || a[v1beta2.BackupTimeZoneAnnotation] != "Europe/Berlin" {
		t.Errorf("v1beta2 annotations %v", a)
	}
	if _, ok := hub.Annotations[ConversionDataAnnotation]; ok {
		t.Errorf("nothing was lost, yet conversion data: %v", hub.Annotations)
	}
	var back EtcdBackup
	if err := back.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if p := back.Spec.BackupPolicy; p == nil || p.Schedule != "0 2 * * *" || p.TimeZone != "Europe/Berlin" || p.MaxBackups != 7 || len(back.Annotations) != 0 {
		t.Errorf("back in v1: policy %+v annotations %v", p, back.Annotations)
	}
	// A CoreOS-style v1beta2 backup with only the annotation reads as a v1 schedule.
	coreos := &v1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{v1beta2.BackupScheduleAnnotation: "@hourly"}}}
	var v1b EtcdBackup
	if err := v1b.ConvertFrom(coreos); err != nil {
		t.Fatal(err)
	}
	if v1b.Spec.BackupPolicy == nil || v1b.Spec.BackupPolicy.Schedule != "@hourly" {
		t.Errorf("v1 view of an annotated v1beta2 backup: %+v", v1b.Spec.BackupPolicy)
	}
}

// spec.etcd is stored as v1beta2 annotations, which the operator reads; a v1beta2 object
// with the annotations reads as spec.etcd; an annotation the int64 field cannot hold
// stays an annotation.
func TestEtcdSettingsAreTheV1beta2Annotations(t *testing.T) {
	src := &EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		Spec: EtcdClusterSpec{Size: 3, Etcd: &EtcdSettings{
			QuotaBackendBytes: 4294967296, AutoCompactionMode: AutoCompactionRevision, AutoCompactionRetention: "10000"}},
	}
	var hub v1beta2.EtcdCluster
	if err := src.ConvertTo(&hub); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		v1beta2.QuotaBackendBytesAnnotation:       "4294967296",
		v1beta2.AutoCompactionModeAnnotation:      "revision",
		v1beta2.AutoCompactionRetentionAnnotation: "10000",
	}
	if !equality.Semantic.DeepEqual(hub.Annotations, want) {
		t.Errorf("v1beta2 annotations %v, want %v", hub.Annotations, want)
	}
	var back EtcdCluster
	if err := back.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(back.Spec.Etcd, src.Spec.Etcd) || len(back.Annotations) != 0 {
		t.Errorf("back in v1: etcd %+v annotations %v", back.Spec.Etcd, back.Annotations)
	}

	coreos := &v1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{
		v1beta2.QuotaBackendBytesAnnotation: "2Gi", v1beta2.AutoCompactionRetentionAnnotation: "1h"}}}
	var v1c EtcdCluster
	if err := v1c.ConvertFrom(coreos); err != nil {
		t.Fatal(err)
	}
	if e := v1c.Spec.Etcd; e == nil || e.AutoCompactionRetention != "1h" || e.QuotaBackendBytes != 0 ||
		v1c.Annotations[v1beta2.QuotaBackendBytesAnnotation] != "2Gi" {
		t.Errorf("v1 view of an annotated v1beta2 cluster: etcd %+v annotations %v", e, v1c.Annotations)
	}
}
