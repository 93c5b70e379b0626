package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/certissue"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// The CertificatesValid condition and the certificate expiry metric: what the TLS
// Secrets the spec names (with built-in issuing, the generation in effect), and the
// member Secrets member pods still mount, are worth,
// read at every reconcile of a TLS cluster. The metric is declared in
// metrics_certificates.go.

// certificatesInUse reads the certificates of the spec's TLS Secrets, with the member
// hosts peer and server certificates must name, and of the member Secrets a member pod
// still mounts that the spec no longer names (mid-roll, or a roll that is stuck: a pod
// on an expiring generation is the real risk). Such a Secret gone from the API server
// is left out (the kubelet keeps what it mounted; there is nothing to read).
func (r *Reconciler) certificatesInUse(ctx context.Context, c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) ([]certissue.InUse, error) {
	out, err := r.specCertificates(ctx, c, pods)
	if err != nil {
		return nil, err
	}
	type mounted struct {
		kind            certissue.Kind
		certKey, caKey  string
		secret, current string
	}
	hostsOf := map[mounted][]string{}
	var order []mounted
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || !metav1IsControlledBy(p, c) {
			continue
		}
		for _, m := range []mounted{
			{certissue.KindPeer, peerCertKey, peerCAKey, render.PodSecretVolume(p, volumePeerTLS), specPeerSecret(c)},
			{certissue.KindServer, serverCertKey, serverCAKey, render.PodSecretVolume(p, volumeServerTLS), specServerSecret(c)},
		} {
			if m.secret == "" || m.secret == m.current {
				continue
			}
			if _, seen := hostsOf[m]; !seen {
				order = append(order, m)
			}
			hostsOf[m] = append(hostsOf[m], render.MemberHost(c, p.Name, r.ClusterDomain))
		}
	}
	for _, m := range order {
		var s corev1.Secret
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: m.secret}, &s)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("secret %q: %w", m.secret, err)
		}
		out = append(out, certissue.InUse{Kind: m.kind, Secret: m.secret, CertKey: m.certKey, CAKey: m.caKey,
			Cert: s.Data[m.certKey], Bundle: s.Data[m.caKey], Hosts: hostsOf[m]})
	}
	return out, nil
}

// specCertificates are the certificates of the spec's TLS Secrets.
func (r *Reconciler) specCertificates(ctx context.Context, c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) ([]certissue.InUse, error) {
	var hosts []string
	for i := range pods {
		if p := &pods[i]; p.DeletionTimestamp == nil && metav1IsControlledBy(p, c) {
			hosts = append(hosts, render.MemberHost(c, p.Name, r.ClusterDomain))
		}
	}
	get := func(name string) (map[string][]byte, error) {
		var s corev1.Secret
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &s); err != nil {
			return nil, fmt.Errorf("secret %q: %w", name, err)
		}
		return s.Data, nil
	}
	var out []certissue.InUse
	var serverBundle []byte
	var serverName string
	if name := specPeerSecret(c); name != "" {
		d, err := get(name)
		if err != nil {
			return nil, err
		}
		out = append(out, certissue.InUse{Kind: certissue.KindPeer, Secret: name, CertKey: peerCertKey, CAKey: peerCAKey,
			Cert: d[peerCertKey], Bundle: d[peerCAKey], Hosts: hosts})
	}
	if name := specServerSecret(c); name != "" {
		d, err := get(name)
		if err != nil {
			return nil, err
		}
		serverBundle, serverName = d[serverCAKey], name
		out = append(out, certissue.InUse{Kind: certissue.KindServer, Secret: name, CertKey: serverCertKey, CAKey: serverCAKey,
			Cert: d[serverCertKey], Bundle: d[serverCAKey], Hosts: hosts})
	}
	if t := c.Spec.TLS; t != nil && t.Static != nil && t.Static.OperatorSecret != "" && serverName != "" {
		name := t.Static.OperatorSecret
		d, err := get(name)
		if err != nil {
			return nil, err
		}
		// The members check the operator's certificate against their server bundle.
		out = append(out, certissue.InUse{Kind: certissue.KindClient, Secret: name, CertKey: etcdadmin.ClientCertKey,
			CAKey: fmt.Sprintf("%s of secret %q", serverCAKey, serverName), Cert: d[etcdadmin.ClientCertKey], Bundle: serverBundle})
	}
	return out, nil
}

// warnWithin is how long before expiry CertificatesValid warns: 30 days, or, with
// built-in issuing (which renews by itself), once half the renewal window is gone by
// without a renewal.
func warnWithin(c *etcdv1beta2.EtcdCluster) time.Duration {
	if c.Spec.TLS != nil && c.Spec.TLS.Auto != nil {
		return min(certissue.WarnWithin, builtinSettings(c.Spec.TLS.Auto).RenewBefore/2)
	}
	if c.Spec.TLS != nil && c.Spec.TLS.CertManager != nil {
		return certManagerWarnWithin(c.Spec.TLS.CertManager) // act_tls_certmanager.go
	}
	return certissue.WarnWithin
}

// reportCertificates sets CertificatesValid and the expiry metric for a TLS cluster;
// issueErr is built-in issuing's failure, if any. A cluster without TLS has neither.
func (r *Reconciler) reportCertificates(ctx context.Context, c *etcdv1beta2.EtcdCluster, issueErr error) {
	labels := prometheus.Labels{"namespace": c.Namespace, "cluster": c.Name}
	if !render.PeerTLS(c) && !render.ClientTLS(c) && issueErr == nil {
		forgetCertificateMetrics(labels)
		return
	}
	now := r.Now()
	stamp := now.UTC().Format(timeFormat)
	set := func(ok bool, reason, msg string) {
		u := conditionUpdate{Type: etcdv1beta2.ClusterConditionCertificatesValid, Status: ok, Reason: reason, Message: msg}
		if !ok {
			u.Fail = reason + ": " + msg
		} else {
			u.Recovered = true
		}
		r.setCondition(c, u, stamp)
	}
	// Waiting on cert-manager with a generation in effect: the certificates in use are
	// what matters (they are assessed, expiry included, while cert-manager is down or a
	// Certificate's spec edit is being issued), the wait is said beside.
	note := ""
	var pe *certManagerPending
	if issueErr != nil && errors.As(issueErr, &pe) && c.Spec.TLS != nil && c.Spec.TLS.Static != nil {
		note = fmt.Sprintf("; cert-manager's next certificates are not usable yet (%s): %v", pe.reason, issueErr)
		issueErr = nil
	}
	if issueErr != nil {
		reason := etcdv1beta2.ReasonCertificateIssueFailed
		var be *builtinTLSError
		if errors.As(issueErr, &be) {
			reason = be.reason
		} else if errors.As(issueErr, &pe) {
			reason = pe.reason
		}
		set(false, reason, issueErr.Error())
		return
	}
	pods, err := r.listMemberPods(ctx, c)
	if err != nil {
		return // said by the reconcile's own failure, if it persists
	}
	inUse, err := r.certificatesInUse(ctx, c, pods)
	if err != nil {
		set(false, etcdv1beta2.ReasonCertificateSecretInvalid, err.Error())
		return
	}
	a := certissue.Assess(inUse, now, warnWithin(c))
	a.Message += note
	forgetCertificateMetrics(labels)
	for kind, t := range a.Expiry {
		certificateExpiry.WithLabelValues(c.Namespace, c.Name, string(kind)).Set(float64(t.Unix()))
	}
	switch a.Verdict {
	case certissue.Valid:
		set(true, etcdv1beta2.ReasonCertificatesValid, a.Message)
	case certissue.ExpiringSoon:
		// Still valid: True, with a reason of its own and a warning event (once).
		u := conditionUpdate{Type: etcdv1beta2.ClusterConditionCertificatesValid, Status: true,
			Reason: etcdv1beta2.ReasonCertificatesExpiringSoon, Message: a.Message,
			Fail: etcdv1beta2.ReasonCertificatesExpiringSoon}
		r.setCondition(c, u, stamp)
	case certissue.Expired:
		set(false, etcdv1beta2.ReasonCertificatesExpired, a.Message)
	default:
		set(false, etcdv1beta2.ReasonCertificatesMismatched, a.Message)
	}
}
