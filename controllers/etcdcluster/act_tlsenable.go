package etcdcluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/planner"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// Turning TLS on for a running plaintext cluster, the controller's part (the steps are
// the planner's, planner/tlsenable.go): what each member pod runs, read off its
// arguments; how a new pod is rendered meanwhile; the peer URL update. (Which scheme the
// operator and backups dial meanwhile is render.DialTLS.) All of it is decided from what the pods run and what etcd says
// at this reconcile, never from status, so a restarted operator carries on where the
// members are.

// podArg is the value of the etcd container's --name=value flag, "" without one. It is
// looked for in the command too, split on spaces: CoreOS's pods ran etcd from a shell
// command line.
func podArg(p *corev1.Pod, name string) string {
	for _, ctr := range p.Spec.Containers {
		if ctr.Name != render.ContainerName && ctr.Name != "etcd" {
			continue
		}
		for _, part := range append(append([]string{}, ctr.Command...), ctr.Args...) {
			for _, a := range strings.Fields(part) {
				if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
					return v
				}
			}
		}
	}
	return ""
}

// peerServesTLS: the pod's etcd listens for peers over https. A pod whose flag cannot
// be found is taken to run as its volumes say, so it is never judged to be mid-way.
func peerServesTLS(p *corev1.Pod) bool {
	v := podArg(p, "listen-peer-urls")
	if v == "" {
		return render.PodSecretVolume(p, volumePeerTLS) != ""
	}
	return strings.HasPrefix(v, "https://")
}

// servesPlaintextClients: the pod's etcd serves plaintext clients (an http client
// listener, alone or beside an https one); without the flag, as its volumes say.
func servesPlaintextClients(p *corev1.Pod) bool {
	v := podArg(p, "listen-client-urls")
	if v == "" {
		return !render.ServesTLSClients(p)
	}
	for _, u := range strings.Split(v, ",") {
		if strings.HasPrefix(strings.TrimSpace(u), "http://") {
			return true
		}
	}
	return false
}

// tlsRender is how a new pod for member name is rendered while TLS may be turning on:
//   - its peer scheme is the one etcd's membership has for it (http until its peer URL
//     is updated), so its peers can reach it at the URL they dial; a member not in the
//     membership yet (a learner being added) takes http while some running pod still
//     cannot dial https peers;
//   - it serves plaintext clients beside TLS ones while some other running pod serves
//     plaintext clients and not every voter is on https peers yet (before the last
//     step), so plaintext clients keep working until that step.
//
// Outside a transition both are the spec's (empty, false).
func tlsRender(c *etcdv1beta2.EtcdCluster, o *observation, name string) (peerScheme string, clientPlaintext bool) {
	if !render.PeerTLS(c) || !render.ClientTLS(c) {
		return "", false
	}
	allCanDialTLS, someoneServesPlain := true, false
	for n, p := range o.pods {
		if p.DeletionTimestamp != nil || n == name {
			continue
		}
		if render.PodSecretVolume(p, volumePeerTLS) == "" {
			allCanDialTLS = false
		}
		if servesPlaintextClients(p) {
			someoneServesPlain = true
		}
	}
	allHTTPSPeers := true
	for _, m := range o.planner.Members {
		if m.IsLearner || m.Name == name {
			continue
		}
		if len(m.PeerURLs) == 0 || !strings.HasPrefix(m.PeerURLs[0], "https://") {
			allHTTPSPeers = false
		}
		if p := o.pods[m.Name]; p == nil || p.DeletionTimestamp != nil || !peerServesTLS(p) {
			allHTTPSPeers = false
		}
	}
	peerScheme = "https"
	if m, ok := memberNamed(o.planner.Members, name); ok && len(m.PeerURLs) > 0 {
		if strings.HasPrefix(m.PeerURLs[0], "http://") {
			peerScheme = "http"
		}
	} else if !allCanDialTLS {
		peerScheme = "http"
	}
	return peerScheme, someoneServesPlain && !(allHTTPSPeers && peerScheme == "https")
}

func memberNamed(ms []planner.Member, name string) (planner.Member, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return planner.Member{}, false
}

// peerURLFor is the peer URL a member added now is given: base's (the spec's, or the
// running members' settings, act_asrunning.go), or http while some running pod cannot dial
// https peers yet (see tlsRender).
func peerURLFor(base podBase, o *observation, name string) string {
	scheme, _ := tlsRender(base.cluster, o, name)
	if scheme == "" {
		return render.PeerURL(base.cluster, name, base.domain)
	}
	return render.PeerURLWithScheme(base.cluster, name, base.domain, scheme)
}

// updatePeerURL executes UpdatePeerURL: the member's peer URL becomes the spec's
// (https). The planner asks for it only once every member can dial https peers; the
// member itself is restarted listening on https by the next step.
func (r *Reconciler) updatePeerURL(ctx context.Context, c *etcdv1beta2.EtcdCluster, o *observation, a planner.Action) error {
	admin, err := o.adminFor(a.Kind)
	if err != nil {
		return err
	}
	url := render.PeerURL(c, a.Name, r.ClusterDomain)
	if _, err := admin.MemberUpdate(ctx, a.ID, []string{url}); err != nil {
		return fmt.Errorf("update peer URL of %s (%s): %w", a.Name, etcdadmin.FormatID(a.ID), err)
	}
	r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonPeerURLUpdated, "%s", a.Message)
	return nil
}
