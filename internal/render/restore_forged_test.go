package render

import (
	"strings"
	"testing"
)

// The renderer takes the restore step only from its Input: annotations on the cluster,
// which anyone who may edit the EtcdCluster can write, never choose an image to run nor
// a Secret or claim to mount.
func TestRestoreAnnotationsAloneRenderNothing(t *testing.T) {
	c := coreosSample("3.6.16")
	c.Annotations = map[string]string{
		AnnotationRestore:                        `{"restore":"r1","uid":"uid-r1","s3":{"path":"b/k","awsSecret":"someone-elses-secret"}}`,
		"etcd.database.coreos.com/restore-image": "attacker.example/tool:latest",
	}
	got := mustRender(t, Input{Cluster: c, Members: bootstrap(c, 3, "")})
	for name, p := range got.pods {
		if len(p.Spec.InitContainers) != 0 {
			t.Errorf("%s: init containers from annotations alone: %+v", name, p.Spec.InitContainers)
		}
		for _, v := range p.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == "someone-elses-secret" {
				t.Errorf("%s: mounts the Secret named in an annotation", name)
			}
		}
		for _, ctr := range p.Spec.Containers {
			if strings.Contains(ctr.Image, "attacker") {
				t.Errorf("%s: runs the image named in an annotation", name)
			}
		}
	}
}
