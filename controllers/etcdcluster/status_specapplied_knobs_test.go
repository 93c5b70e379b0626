package etcdcluster

import (
	"slices"
	"testing"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// A change of a member pod option is a drift that needs new pods (the rolling
// reconfiguration replaces members one at a time); the same value written as JSON
// spaced differently is no change.
func TestPodKnobsDrift(t *testing.T) {
	base := func(a map[string]string) *etcdv1beta2.EtcdCluster {
		c := statusCluster("knobs", "3.6.16")
		c.Spec.Size = 3
		c.Annotations = a
		return c
	}
	spread := `[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]`
	for _, tc := range []struct {
		name         string
		created, now map[string]string
		want         []string
	}{
		{name: "none", created: nil, now: nil},
		{name: "priority class set", now: map[string]string{etcdv1beta2.PodPriorityClassNameAnnotation: "high"},
			want: []string{"pod.priorityClassName"}},
		{name: "every option", now: map[string]string{
			etcdv1beta2.PodImagePullSecretsAnnotation:          `[{"name":"regcred"}]`,
			etcdv1beta2.PodPriorityClassNameAnnotation:         "high",
			etcdv1beta2.PodTopologySpreadConstraintsAnnotation: spread,
			etcdv1beta2.PodServiceAccountNameAnnotation:        "etcd",
			etcdv1beta2.PodDNSConfigAnnotation:                 `{"searches":["example.com"]}`,
		}, want: []string{"pod.imagePullSecrets", "pod.priorityClassName", "pod.topologySpreadConstraints", "pod.serviceAccountName", "pod.dnsConfig"}},
		{name: "the same JSON spaced differently", created: map[string]string{etcdv1beta2.PodTopologySpreadConstraintsAnnotation: spread},
			now: map[string]string{etcdv1beta2.PodTopologySpreadConstraintsAnnotation: "[ {\"topologyKey\": \"topology.kubernetes.io/zone\", \"maxSkew\": 1, \"whenUnsatisfiable\": \"DoNotSchedule\"} ]"}},
		{name: "service account removed", created: map[string]string{etcdv1beta2.PodServiceAccountNameAnnotation: "etcd"}, now: nil,
			want: []string{"pod.serviceAccountName"}},
		{name: "client service options need no new pod", now: map[string]string{etcdv1beta2.ClientServiceTypeAnnotation: "NodePort"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := createdPod(t, base(tc.created), "knobs-a")
			now := base(tc.now)
			if got := staleSpecFields(now, "", p, ""); !slices.Equal(got, tc.want) {
				t.Fatalf("stale fields %v, want %v", got, tc.want)
			}
			d := podDrift(now, "", p)
			if d.NewPod != (len(tc.want) > 0) || d.Metadata || d.TLS || len(d.Held) > 0 {
				t.Errorf("drift %+v", d)
			}
		})
	}
}
