package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

func TestPodSecurityContext(t *testing.T) {
	restricted := &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](NonRootID), RunAsGroup: ptr.To[int64](NonRootID),
		FSGroup: ptr.To[int64](NonRootID), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	with := func(f func(*corev1.PodSecurityContext)) *corev1.PodSecurityContext {
		sc := restricted.DeepCopy()
		f(sc)
		return sc
	}
	for _, tc := range []struct {
		name       string
		user, want *corev1.PodSecurityContext
	}{
		{"no user settings", nil, restricted},
		{"empty user settings", &corev1.PodSecurityContext{}, restricted},
		{"the user's fsGroup wins, the rest defaults", &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)},
			with(func(sc *corev1.PodSecurityContext) { sc.FSGroup = ptr.To[int64](2000) })},
		{"the user's seccomp profile wins", &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("etcd.json")}},
			with(func(sc *corev1.PodSecurityContext) {
				sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("etcd.json")}
			})},
		{"fields with no default are kept", &corev1.PodSecurityContext{SupplementalGroups: []int64{5}, FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch)},
			with(func(sc *corev1.PodSecurityContext) {
				sc.SupplementalGroups = []int64{5}
				sc.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
			})},
		// A CoreOS-era cluster that asked for root keeps running as root.
		{"runAsUser 0 drops the runAsNonRoot default", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)},
			with(func(sc *corev1.PodSecurityContext) {
				sc.RunAsUser, sc.RunAsNonRoot, sc.RunAsGroup = ptr.To[int64](0), nil, nil
			})},
		{"the user's runAsUser comes without the default group", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
			with(func(sc *corev1.PodSecurityContext) { sc.RunAsUser, sc.RunAsGroup = ptr.To[int64](1000), nil })},
		{"the user's runAsUser and runAsGroup", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1001)},
			with(func(sc *corev1.PodSecurityContext) {
				sc.RunAsUser, sc.RunAsGroup = ptr.To[int64](1000), ptr.To[int64](1001)
			})},
		{"an explicit runAsNonRoot false wins", &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)},
			with(func(sc *corev1.PodSecurityContext) { sc.RunAsNonRoot = ptr.To(false) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before *corev1.PodSecurityContext
			if tc.user != nil {
				before = tc.user.DeepCopy()
			}
			got, err := PodSecurityContext(tc.user)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if !equality.Semantic.DeepEqual(tc.user, before) {
				t.Errorf("the user's securityContext was modified: %+v", tc.user)
			}
		})
	}
}

// Every container of every member pod (etcd, and the restore or recovery init
// container) runs without privilege escalation or capabilities, and the pod as non-root
// with RuntimeDefault seccomp: the Pod Security "restricted" profile.
func TestMemberPodsAreRestricted(t *testing.T) {
	s3 := v1beta2.S3BackupSource{Path: "bucket/key", AWSSecret: "aws"}
	restoring, step := restoredCluster(t, s3, testSHA)
	recovering := coreosSample("3.6.16")
	rm := bootstrap(recovering, 1, "")
	rm[0].Recovery = &Recovery{SourceURL: "http://10.1.2.3:2379", MinRevision: 1, Token: "t2", Image: "etcd-operator:v0.2.0"}
	plain := coreosSample("3.6.16")
	for name, in := range map[string]Input{
		"plain":      {Cluster: plain, Members: bootstrap(plain, 1, "")},
		"restoring":  {Cluster: restoring, Members: bootstrap(restoring, 1, ""), Restore: step},
		"recovering": {Cluster: recovering, Members: rm},
	} {
		for _, p := range mustRender(t, in).pods {
			psc := p.Spec.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
				psc.FSGroup == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("%s %s: pod securityContext %+v", name, p.Name, psc)
			}
			containers := append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...)
			if name != "plain" && len(p.Spec.InitContainers) == 0 {
				t.Errorf("%s %s: no init container", name, p.Name)
			}
			for _, c := range containers {
				if !equality.Semantic.DeepEqual(c.SecurityContext, ContainerSecurityContext()) {
					t.Errorf("%s %s container %s: securityContext %+v", name, p.Name, c.Name, c.SecurityContext)
				}
			}
		}
	}
}
