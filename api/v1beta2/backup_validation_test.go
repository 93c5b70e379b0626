package v1beta2_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestBackupAdmissionBounds: every count and duration of an EtcdBackup has a maximum the
// API server enforces in both versions, and the rejection names the field; a backup
// names its cluster one way, not two.
func TestBackupAdmissionBounds(t *testing.T) {
	c := startAPIServer(t)
	ctx := context.Background()
	backup := func(version, name, spec string) string {
		return "apiVersion: etcd.database.coreos.com/" + version + "\nkind: EtcdBackup\nmetadata: {name: " + name + "}\nspec: " + spec
	}
	const s3 = `storageType: S3, s3: {path: b/k, awsSecret: a}`
	const s3v1 = `storageType: S3, s3: {path: b/k, credentialsSecret: a}`

	accepted := []string{
		backup("v1beta2", "at-max", `{clusterRef: {name: c}, `+s3+`, backupPolicy: {timeoutInSecond: 86400, backupIntervalInSecond: 31622400, maxBackups: 10000}}`),
		backup("v1beta2", "coreos-endpoints", `{etcdEndpoints: ["http://c-client:2379"], `+s3+`}`),
		backup("v1", "v1-at-max", `{clusterRef: {name: c}, `+s3v1+`, backupPolicy: {timeout: 24h, backupInterval: 8784h, maxBackups: 10000}}`),
		backup("v1beta2", "ambient", `{clusterRef: {name: c}, storageType: S3, s3: {path: b/k, credentialsSource: Environment, encryptionKeySecret: k}}`),
		backup("v1", "v1-ambient", `{clusterRef: {name: c}, storageType: S3, s3: {path: b/k, credentialsSource: Environment, encryptionKeySecret: k}}`),
	}
	for _, doc := range accepted {
		if err := c.Create(ctx, objectFromYAML(t, doc)); err != nil {
			t.Errorf("rejected %s: %v", doc, err)
		}
	}

	rejected := []struct{ name, field, doc string }{
		{"timeout over a day", "spec.backupPolicy.timeoutInSecond",
			backup("v1beta2", "t", `{clusterRef: {name: c}, `+s3+`, backupPolicy: {timeoutInSecond: 86401}}`)},
		{"interval of MaxInt64 seconds", "spec.backupPolicy.backupIntervalInSecond",
			backup("v1beta2", "i", `{clusterRef: {name: c}, `+s3+`, backupPolicy: {backupIntervalInSecond: 9223372036854775807}}`)},
		{"interval over 366 days", "spec.backupPolicy.backupIntervalInSecond",
			backup("v1beta2", "i2", `{clusterRef: {name: c}, `+s3+`, backupPolicy: {backupIntervalInSecond: 31622401}}`)},
		{"maxBackups", "spec.backupPolicy.maxBackups",
			backup("v1beta2", "m", `{clusterRef: {name: c}, `+s3+`, backupPolicy: {maxBackups: 10001}}`)},
		{"too many endpoints", "spec.etcdEndpoints",
			backup("v1beta2", "e", `{etcdEndpoints: [a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q], `+s3+`}`)},
		{"clusterRef and endpoints", "spec.clusterRef",
			backup("v1beta2", "both", `{clusterRef: {name: c}, etcdEndpoints: ["http://c-client:2379"], `+s3+`}`)},
		{"empty clusterRef name", "spec.clusterRef.name",
			backup("v1beta2", "nameless", `{clusterRef: {name: ""}, `+s3+`}`)},
		{"v1 timeout over a day", "spec.backupPolicy.timeout",
			backup("v1", "v1t", `{clusterRef: {name: c}, `+s3v1+`, backupPolicy: {timeout: 24h1s}}`)},
		{"v1 interval of centuries", "spec.backupPolicy.backupInterval",
			backup("v1", "v1i", `{clusterRef: {name: c}, `+s3v1+`, backupPolicy: {backupInterval: 2562047h}}`)},
		{"v1 maxBackups", "spec.backupPolicy.maxBackups",
			backup("v1", "v1m", `{clusterRef: {name: c}, `+s3v1+`, backupPolicy: {maxBackups: 10001}}`)},
		{"ambient credentials and a Secret", "spec.s3.awsSecret",
			backup("v1beta2", "amb", `{clusterRef: {name: c}, storageType: S3, s3: {path: b/k, awsSecret: a, credentialsSource: Environment}}`)},
		{"unknown credentials source", "spec.s3.credentialsSource",
			backup("v1beta2", "src", `{clusterRef: {name: c}, storageType: S3, s3: {path: b/k, awsSecret: a, credentialsSource: Operator}}`)},
		{"v1 ambient credentials and a Secret", "spec.s3.credentialsSecret",
			backup("v1", "v1amb", `{clusterRef: {name: c}, storageType: S3, s3: {path: b/k, credentialsSecret: a, credentialsSource: Environment}}`)},
		{"v1 clusterRef and endpoints", "spec.clusterRef",
			backup("v1", "v1both", `{clusterRef: {name: c}, etcdEndpoints: ["http://c-client:2379"], `+s3v1+`}`)},
	}
	for _, tc := range rejected {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			err := c.Create(ctx, objectFromYAML(t, tc.doc))
			if err == nil {
				t.Fatalf("accepted; want a rejection naming %s", tc.field)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("want an Invalid error naming %s, got %v", tc.field, err)
			}
		})
	}
}
