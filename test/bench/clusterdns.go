package bench

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/test/bench/clusterdns"
	"github.com/etcd-operator/etcd-operator/test/bench/images"
)

// startClusterDNS deploys CoreDNS (test/bench/clusterdns) and waits until this process
// resolves a Service name through the kube-dns ClusterIP, as every pod and an in-process
// operator will. Two replicas on different nodes, evicted 5 s after their node fails: a
// node fault must not take cluster DNS with it.
func (b *Bench) startClusterDNS(ctx context.Context) error {
	dir := filepath.Join(b.dir, "dns-withheld")
	w, err := clusterdns.NewWithholder(dir, clusterDomain)
	if err != nil {
		return err
	}
	b.withholder = w
	for _, o := range clusterdns.Objects(clusterdns.Options{Image: images.CoreDNSImage, ClusterIP: ClusterDNSIP, Domain: clusterDomain, WithholdDir: dir}) {
		if d, ok := o.(*appsv1.Deployment); ok {
			spreadAndFailFast(d)
		}
		if err := b.client.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	r := &net.Resolver{PreferGo: true}
	return b.poll(ctx, "kubernetes.default resolves through cluster DNS", 2*time.Minute, 200*time.Millisecond, func() (bool, string, error) {
		if err := b.nodeDaemonsExited(); err != nil {
			return false, "", err
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := r.LookupHost(lctx, "kubernetes.default.svc."+clusterDomain)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(addrs) == 1 && addrs[0] == b.kubernetesServiceIP(), fmt.Sprint(addrs), nil
	})
}

func spreadAndFailFast(d *appsv1.Deployment) {
	d.Spec.Replicas = ptr.To[int32](2)
	spec := &d.Spec.Template.Spec
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
				TopologyKey:   corev1.LabelHostname,
			},
		}},
	}}
	spec.Tolerations = append(spec.Tolerations,
		corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)},
		corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)},
	)
}

// DelayDNS withholds a cluster DNS name for d: lookups get NXDOMAIN until then (CoreDNS
// notices within half a second). "*.<subdomain>.<namespace>[.svc[.<domain>]]" withholds
// every name below a headless Service that is not published yet: the member pods that
// exist now keep resolving, like records that appeared before the fault.
func (f *Faults) DelayDNS(name string, d time.Duration) error {
	w := f.b.withholder
	if w == nil {
		return fmt.Errorf("cluster DNS is not running")
	}
	var keep map[string][]string
	if suffix, ok := strings.CutPrefix(name, "*."); ok {
		labels := strings.Split(suffix, ".")
		if len(labels) < 2 {
			return fmt.Errorf("DelayDNS %q: want *.<subdomain>.<namespace>[...]", name)
		}
		var pods corev1.PodList
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.b.client.List(ctx, &pods, client.InNamespace(labels[1])); err != nil {
			return err
		}
		keep = map[string][]string{}
		for _, p := range pods.Items {
			if p.Spec.Subdomain == labels[0] && p.Spec.Hostname != "" && p.Status.PodIP != "" {
				keep[clusterdns.Absolute(p.Spec.Hostname+"."+labels[0]+"."+labels[1], clusterDomain)] = []string{p.Status.PodIP}
			}
		}
	}
	return w.Withhold(name, time.Now().Add(d), keep)
}
