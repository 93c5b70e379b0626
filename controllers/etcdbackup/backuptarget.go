package etcdbackup

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/backuptarget"
	"github.com/etcd-operator/etcd-operator/internal/certissue"
	"github.com/etcd-operator/etcd-operator/internal/certmanager"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// namespaceClusters is what an EtcdBackup may reach: the EtcdClusters of its own
// namespace, each with the IPs of the member pods it controls.
type namespaceClusters struct {
	Namespace string
	// PodIPs maps each cluster's name to its member pods' IPs (possibly none).
	PodIPs map[string][]string
}

// clusterOfEndpoints finds the one EtcdCluster of the namespace that every endpoint
// names. The endpoints only identify the cluster: the operator then dials that
// cluster's member pods itself, never the given names, because a name in the
// namespace's DNS can still be steered elsewhere by whoever may edit its Services
// (an ExternalName, a selectorless Service with hand-made EndpointSlices).
func clusterOfEndpoints(endpoints []string, scope namespaceClusters) (string, error) {
	if len(endpoints) == 0 {
		return "", fmt.Errorf("spec.etcdEndpoints is empty")
	}
	found := ""
	for _, ep := range endpoints {
		c, err := clusterOfEndpoint(ep, scope)
		if err != nil {
			return "", err
		}
		if found != "" && c != found {
			return "", fmt.Errorf("spec.etcdEndpoints name two clusters, %s and %s", found, c)
		}
		found = c
	}
	return found, nil
}

// clusterOfEndpoint is the cluster of the namespace one endpoint names, by host: a member
// pod's IP, or one of the DNS names the cluster's Services give it in that namespace.
func clusterOfEndpoint(endpoint string, scope namespaceClusters) (string, error) {
	host, err := backuptarget.EndpointHost(endpoint)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); ip != nil {
		for name, ips := range scope.PodIPs {
			for _, p := range ips {
				if q := net.ParseIP(p); q != nil && q.Equal(ip) {
					return name, nil
				}
			}
		}
		return "", fmt.Errorf("spec.etcdEndpoints: %s is not a member pod of an EtcdCluster in namespace %s", endpoint, scope.Namespace)
	}
	var matches []string
	for _, c := range backuptarget.HostClusterCandidates(host, scope.Namespace) {
		if _, ok := scope.PodIPs[c]; ok && !slices.Contains(matches, c) {
			matches = append(matches, c)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("spec.etcdEndpoints: %s does not name an EtcdCluster of namespace %s (<cluster>-client[.%s.svc], <member>.<cluster>.%s.svc or a member pod IP)", endpoint, scope.Namespace, scope.Namespace, scope.Namespace)
	default:
		return "", fmt.Errorf("spec.etcdEndpoints: %s could name cluster %s or %s; use spec.clusterRef", endpoint, matches[0], matches[1])
	}
}

// backupTarget is what one backup dials.
type backupTarget struct {
	// Endpoints are client URLs: the member pods of a cluster of the backup's namespace,
	// or, with --allow-external-backup-endpoints, spec.etcdEndpoints as given.
	Endpoints []string
	// TLSSecret is the client TLS Secret in the backup's namespace ("" = none).
	TLSSecret string
	// Cluster is the EtcdCluster of the namespace the endpoints belong to; "" for
	// external endpoints, whose dial errors are not reported in detail (see dialFailure).
	Cluster string
	// Inherit is what the backup pod takes from the cluster's member pods (pull
	// secrets, priority class, tolerations); nothing for external endpoints.
	Inherit render.Inherited
	// RootSecret is the cluster's etcd auth root Secret ("" = no auth; auth.go).
	RootSecret string
}

// resolveTarget finds what a backup may dial: the members of the cluster spec.clusterRef
// names, or of the cluster of the namespace spec.etcdEndpoints names. Nothing outside the
// namespace is dialled unless the operator allows external endpoints.
func (r *Reconciler) resolveTarget(ctx context.Context, eb *etcdv1beta2.EtcdBackup) (*backupTarget, error) {
	if ref := eb.Spec.ClusterRef; ref != nil {
		var c etcdv1beta2.EtcdCluster
		if err := r.Get(ctx, client.ObjectKey{Namespace: eb.Namespace, Name: ref.Name}, &c); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonClusterNotFound, Err: fmt.Errorf("spec.clusterRef.name: no EtcdCluster %q in namespace %s", ref.Name, eb.Namespace)}
			}
			return nil, err
		}
		if t := c.Spec.TLS; t != nil && t.Auto != nil && t.Static == nil {
			// Built-in issuing: the members serve TLS to the clients' Secret the operator
			// keeps (in memory only, as the cluster controller resolves it).
			name := certissue.ClientSecretName(c.Name)
			t.Static = &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{PeerSecret: name, ServerSecret: name}, OperatorSecret: name}
		}
		if t := c.Spec.TLS; t != nil && t.CertManager != nil && t.Static == nil {
			// cert-manager issuing: likewise, the clients' Secret the operator keeps.
			name := certmanager.ClientSecretName(c.Name)
			t.Static = &etcdv1beta2.StaticTLS{Member: &etcdv1beta2.MemberSecret{PeerSecret: name, ServerSecret: name}, OperatorSecret: name}
		}
		tlsSecret := eb.Spec.ClientTLSSecret
		if tlsSecret == "" && render.ClientTLS(&c) {
			tlsSecret = c.Spec.TLS.Static.OperatorSecret
		}
		return r.memberTarget(ctx, &c, tlsSecret)
	}

	var clusters etcdv1beta2.EtcdClusterList
	if err := r.List(ctx, &clusters, client.InNamespace(eb.Namespace)); err != nil {
		return nil, err
	}
	scope := namespaceClusters{Namespace: eb.Namespace, PodIPs: map[string][]string{}}
	for i := range clusters.Items {
		pods, err := r.memberPods(ctx, &clusters.Items[i])
		if err != nil {
			return nil, err
		}
		ips := []string{}
		for _, p := range pods {
			for _, ip := range p.Status.PodIPs {
				ips = append(ips, ip.IP)
			}
			ips = append(ips, p.Status.PodIP)
		}
		scope.PodIPs[clusters.Items[i].Name] = ips
	}
	name, err := clusterOfEndpoints(eb.Spec.EtcdEndpoints, scope)
	if err != nil {
		if r.AllowExternalEndpoints {
			return &backupTarget{Endpoints: eb.Spec.EtcdEndpoints, TLSSecret: eb.Spec.ClientTLSSecret}, nil
		}
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonEndpointsRefused, Err: fmt.Errorf("%w; only clusters of the backup's namespace may be backed up (or use spec.clusterRef)", err)}
	}
	for i := range clusters.Items {
		if clusters.Items[i].Name == name {
			// CoreOS semantics: the user's clientTLSSecret, or none.
			return r.memberTarget(ctx, &clusters.Items[i], eb.Spec.ClientTLSSecret)
		}
	}
	return nil, fmt.Errorf("cluster %s vanished", name)
}

// memberTarget dials the cluster's member pods the way the cluster controller does: pod
// IPs, or for a TLS cluster the members' DNS names its certificates are issued for, in
// the one scheme every member pod serves (render.DialTLS). While a plaintext cluster
// moves to TLS, or turning TLS on is refused, members that do not serve https yet are
// dialled over http, which all of them serve then, without a client certificate.
func (r *Reconciler) memberTarget(ctx context.Context, c *etcdv1beta2.EtcdCluster, tlsSecret string) (*backupTarget, error) {
	if err := r.checkRootSecret(ctx, c); err != nil { // auth.go
		return nil, err
	}
	pods, err := r.memberPods(ctx, c)
	if err != nil {
		return nil, err
	}
	useTLS := render.DialTLS(c, pods)
	if render.ClientTLS(c) && !useTLS {
		tlsSecret = ""
	}
	t := &backupTarget{TLSSecret: tlsSecret, Cluster: c.Name, Inherit: render.InheritedFrom(c), RootSecret: clusterRootSecret(c)}
	for _, p := range pods {
		t.Endpoints = append(t.Endpoints, render.MemberDialURL(c, p, r.ClusterDomain, useTLS))
	}
	if len(t.Endpoints) == 0 {
		return nil, &backupstorage.Error{Reason: etcdv1beta2.ReasonSnapshotFailed, Err: fmt.Errorf("EtcdCluster %s has no running member pod", c.Name)}
	}
	return t, nil
}

// memberPods are the running pods the cluster controls. Pods on the host network are
// left out: their IP is a node's, where anything may listen on the client port.
func (r *Reconciler) memberPods(ctx context.Context, c *etcdv1beta2.EtcdCluster) ([]*corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabelsSelector{Selector: render.ClusterSelector(c.Name)}); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if metav1.IsControlledBy(p, c) && !p.Spec.HostNetwork && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// dialFailure is what status says about a failed snapshot. For a cluster of the
// namespace the error is the user's to debug and is shown as is (a TLS problem as
// TLSError). For external endpoints the user chose freely, refused, timed out and TLS
// failures all read alike, so status cannot probe ports; the operator log keeps the
// detail at debug level.
func dialFailure(ctx context.Context, t *backupTarget, reason string, err error) error {
	if t.Cluster != "" {
		return &backupstorage.Error{Reason: reason, Err: err}
	}
	log.FromContext(ctx).V(1).Info("backup from external endpoints failed", "endpoints", t.Endpoints, "reason", reason, "error", err.Error())
	return &backupstorage.Error{Reason: etcdv1beta2.ReasonSnapshotFailed, Err: errors.New("cannot reach etcd at the given endpoints (spec.etcdEndpoints) or take a snapshot there")}
}

// annotationBackupExternal on a backup pod records that it dials external endpoints, so
// its failure is reported without detail (dialFailure) when it finishes.
const annotationBackupExternal = "etcd.database.coreos.com/backup-external-endpoints"

func backupPodAnnotations(t *backupTarget) map[string]string {
	if t.Cluster != "" {
		return nil
	}
	return map[string]string{annotationBackupExternal: "true"}
}

// podDialedExternal: the finished backup pod dialled external endpoints. Read from the
// pod the operator created (a tenant removing the annotation only gets more detail about
// endpoints the operator admin allowed anyway).
func podDialedExternal(p *corev1.Pod) bool { return p.Annotations[annotationBackupExternal] == "true" }
