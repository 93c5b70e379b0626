package etcdcluster

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/render"
	"github.com/etcd-operator/etcd-operator/internal/tlsproof"
)

// A rotation of the member TLS Secrets, the controller's part: proving it safe before
// the planner restarts anyone (planner/tls.go rolls it out or refuses it). What the
// members run on is read off their pods' volumes at every reconcile, never from status,
// so an operator restarted mid-rotation proves the same thing again from what it sees.

// Keys of the member Secrets, as the chart mounts them (CoreOS's layout).
const (
	peerCertKey   = "peer.crt"
	peerCAKey     = "peer-ca.crt"
	serverCertKey = "server.crt"
	serverCAKey   = "server-ca.crt"
)

// proveTLSRotation is why rotating the member pods onto the spec's TLS Secrets is not
// safe, "" when it is or when no rotation is pending. A rotation is pending when some
// pod runs on other Secrets than the spec names with the same schemes (a scheme change
// needs no proof: the planner refuses it). Every Secret in use and the spec's are read;
// members on old and new Secrets, and the operator, must trust each other both ways.
func (r *Reconciler) proveTLSRotation(ctx context.Context, c *etcdv1beta2.EtcdCluster, pods map[string]*corev1.Pod, now time.Time) string {
	wantPeer, wantServer := specPeerSecret(c), specServerSecret(c)
	pending := false
	peers, servers := map[string]bool{}, map[string]bool{}
	var hosts []string
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		peer, server := render.PodSecretVolume(p, volumePeerTLS), render.PodSecretVolume(p, volumeServerTLS)
		if (peer != "") != (wantPeer != "") || (server != "") != (wantServer != "") {
			continue
		}
		pending = pending || peer != wantPeer || server != wantServer
		if peer != "" {
			peers[peer] = true
		}
		if server != "" {
			servers[server] = true
		}
		hosts = append(hosts, render.MemberHost(c, p.Name, r.ClusterDomain))
	}
	if !pending {
		return ""
	}
	sort.Strings(hosts)
	if err := r.proveRole(ctx, c, tlsproof.Peer, peers, wantPeer, hosts, now); err != nil {
		return err.Error()
	}
	if err := r.proveRole(ctx, c, tlsproof.Server, servers, wantServer, hosts, now); err != nil {
		return err.Error()
	}
	return ""
}

// proveRole proves the move from the Secrets in use to want for one role, and for the
// server role also that the operator's client Secret and every server Secret involved
// trust each other (the operator dials members on both while the rotation runs).
func (r *Reconciler) proveRole(ctx context.Context, c *etcdv1beta2.EtcdCluster, role tlsproof.Role, inUse map[string]bool, want string, hosts []string, now time.Time) error {
	if want == "" {
		return nil
	}
	certKey, caKey := peerCertKey, peerCAKey
	if role == tlsproof.Server {
		certKey, caKey = serverCertKey, serverCAKey
	}
	next, err := r.readPair(ctx, c.Namespace, want, certKey, caKey)
	if err != nil {
		return err
	}
	var running []tlsproof.Pair
	for _, name := range sortedKeys(inUse) {
		p, err := r.readPair(ctx, c.Namespace, name, certKey, caKey)
		if err != nil {
			return err
		}
		running = append(running, p)
	}
	if err := tlsproof.Rotation(role, running, next, hosts, now); err != nil {
		return err
	}
	if role != tlsproof.Server || c.Spec.TLS.Static.OperatorSecret == "" {
		return nil
	}
	op, err := r.readPair(ctx, c.Namespace, c.Spec.TLS.Static.OperatorSecret, etcdadmin.ClientCertKey, etcdadmin.ClientCAKey)
	if err != nil {
		return err
	}
	return tlsproof.Operator(op, append(running, next), now)
}

// readPair reads a certificate and the CA bundle beside it from a Secret of the
// cluster's namespace.
func (r *Reconciler) readPair(ctx context.Context, ns, name, certKey, caKey string) (tlsproof.Pair, error) {
	var s corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		return tlsproof.Pair{}, fmt.Errorf("secret %q: %w", name, err)
	}
	return tlsproof.Pair{Secret: name, CertKey: certKey, CAKey: caKey, Cert: s.Data[certKey], CA: s.Data[caKey]}, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
