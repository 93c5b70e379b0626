package etcdcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/certissue"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// Built-in certificate issuing (spec.TLS.auto; v1's spec.tls.issuer.builtin), the
// controller's part: observe the CA Secret, the Secrets of the generation in effect and
// which generation the member pods run; plan with certissue.Decide; act by writing the
// CA Secret and issuing the next generation's Secrets. The reconcile then goes on with
// spec.TLS.static pointing at that generation's Secrets, in memory only: turning TLS on
// for a plaintext cluster and rolling members onto new Secrets (after tlsproof proves
// every pair trusts each other) are the static paths, unchanged (act_tlsenable.go,
// observe_tlsrotation.go).
//
// The CA Secret is the state; a generation's Secrets are written once, after the CA
// Secret names their generation, and never changed, so an operator stopped between any
// two writes finds them missing and issues them from the state again.

// Keys of the member Secrets' private keys, as the chart mounts them.
const (
	peerKeyKey   = "peer.key"
	serverKeyKey = "server.key"
)

// LabelBuiltinTLS marks the Secrets built-in issuing writes.
const LabelBuiltinTLS = "etcd.database.coreos.com/builtin-tls"

// builtinCASecret is the name of the cluster's CA Secret.
func builtinCASecret(c *etcdv1beta2.EtcdCluster) string { return c.Name + "-builtin-tls-ca" }

// BuiltinClientSecret is the Secret the cluster's clients mount: a client certificate
// and the CA bundle of the generation in effect (keys etcd-client.crt, etcd-client.key,
// etcd-client-ca.crt), kept under one name and updated in place, so a client that
// rereads its mounted files follows renewals and CA rotations (the bundle holds the new
// CA a whole roll-out before any member presents a certificate it signed).
func BuiltinClientSecret(cluster string) string { return certissue.ClientSecretName(cluster) }

// builtinSecrets are the names of a generation's peer, server and client Secrets.
func builtinSecrets(c *etcdv1beta2.EtcdCluster, gen int) (peer, server, client string) {
	p := fmt.Sprintf("%s-builtin-tls-%d-", c.Name, gen)
	return p + "peer", p + "server", p + "client"
}

func builtinSettings(a *etcdv1beta2.AutoTLS) certissue.Settings {
	d := func(x *metav1.Duration) time.Duration {
		if x == nil {
			return 0
		}
		return x.Duration
	}
	return certissue.Settings{CertificateLifetime: d(a.CertificateLifetime), RenewBefore: d(a.RenewBefore),
		CALifetime: d(a.CALifetime), CARenewBefore: d(a.CARenewBefore), CAStepDwell: d(a.CAStepDwell)}.WithDefaults()
}

// builtinTLSError is a failure of built-in issuing, for CertificatesValid's reason.
type builtinTLSError struct {
	reason string
	err    error
}

func (e *builtinTLSError) Error() string { return e.err.Error() }
func (e *builtinTLSError) Unwrap() error { return e.err }

func (e *caLostError) Unwrap() error { return e.err }

// resolveBuiltinTLS does built-in issuing's one step, if any, and points c's
// spec.TLS.static at the generation in effect (c and the status writer's base, so the
// status patch never carries it; the writer puts it back into c after each patch, which
// reads back the stored object). It does nothing for a cluster without spec.TLS.auto.
// due is when the next step falls due with time alone (certissue.NextDue; zero: none):
// the reconcile is requeued for then.
func (r *Reconciler) resolveBuiltinTLS(ctx context.Context, c *etcdv1beta2.EtcdCluster, w *statusWriter) (due time.Time, err error) {
	if c.Spec.TLS == nil || c.Spec.TLS.Auto == nil {
		return time.Time{}, nil
	}
	st := builtinSettings(c.Spec.TLS.Auto)
	now := r.Now()
	pods, err := r.listMemberPods(ctx, c)
	if err != nil {
		return time.Time{}, err
	}
	state, err := r.builtinState(ctx, c, pods, st, now)
	var lost *caLostError
	if errors.As(err, &lost) {
		// The members go on with the certificates they run, so failover and scaling
		// still work; nothing is issued until the CA is back.
		if lost.generation > 0 {
			useBuiltinGeneration(c, w, lost.generation)
		}
		return time.Time{}, err
	}
	if err != nil {
		return time.Time{}, err
	}
	names, err := r.builtinNames(ctx, c, false)
	if err != nil {
		return time.Time{}, err
	}
	leaves, err := r.builtinLeaves(ctx, c, state, st, now)
	if err != nil {
		return time.Time{}, err
	}
	peer, server, _ := builtinSecrets(c, state.Generation)
	rolledOut := rolledOutTo(c, pods, peer, server)
	token := c.Annotations[etcdv1beta2.AnnotationRotateCA]
	d := certissue.Decide(state, certissue.Observed{Leaves: leaves, RolledOut: rolledOut, RotationToken: token}, names, st, now)
	if d.Step != certissue.Keep {
		next, err := certissue.Apply(state, d, c.Name, st, token, now)
		if err != nil {
			return time.Time{}, &builtinTLSError{reason: etcdv1beta2.ReasonCertificateIssueFailed, err: err}
		}
		if err := r.writeBuiltinState(ctx, c, next); err != nil {
			return time.Time{}, err
		}
		if leaves, err = r.builtinLeaves(ctx, c, next, st, now); err != nil {
			return time.Time{}, err
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, etcdv1beta2.EventReasonCertificatesIssued,
			"certificates generation %d (%s): %s", next.Generation, d.Step, d.Reason)
		state = next
	}
	_, _, operator := builtinSecrets(c, state.Generation)
	if err := r.syncClientSecret(ctx, c, operator, BuiltinClientSecret(c.Name), builtinIssuing); err != nil {
		return time.Time{}, err
	}
	useBuiltinGeneration(c, w, state.Generation)
	return certissue.NextDue(state, leaves, st), nil
}

// useBuiltinGeneration points c's spec.TLS.static (and w's base, if any) at generation
// gen's Secrets.
func useBuiltinGeneration(c *etcdv1beta2.EtcdCluster, w *statusWriter, gen int) {
	peer, server, operator := builtinSecrets(c, gen)
	useStaticTLS(c, w, &etcdv1beta2.StaticTLS{
		Member:         &etcdv1beta2.MemberSecret{PeerSecret: peer, ServerSecret: server},
		OperatorSecret: operator,
	})
}

// observeBuiltinTLS points a paused cluster's spec.TLS.static at the generation in
// effect, as its CA Secret records it, and writes nothing: a paused cluster is observed
// over the scheme and with the client certificate its members serve. Without a readable
// CA Secret the generation the member pods mount is taken.
func (r *Reconciler) observeBuiltinTLS(ctx context.Context, c *etcdv1beta2.EtcdCluster, w *statusWriter, pods []corev1.Pod) {
	if c.Spec.TLS == nil || c.Spec.TLS.Auto == nil {
		return
	}
	gen := 0
	if s, err := r.getOwnedSecret(ctx, c, builtinCASecret(c), builtinIssuing); err == nil && s != nil {
		if state, err := certissue.DecodeState(s.Data); err == nil {
			gen = state.Generation
		}
	}
	if gen == 0 {
		gen = mountedBuiltinGeneration(c, pods)
	}
	if gen > 0 {
		useBuiltinGeneration(c, w, gen)
	}
}

// mountedBuiltinGeneration is the newest built-in issuing generation whose peer Secret a
// member pod of c mounts (0: none).
func mountedBuiltinGeneration(c *etcdv1beta2.EtcdCluster, pods []corev1.Pod) int {
	prefix := c.Name + "-builtin-tls-"
	newest := 0
	for i := range pods {
		p := &pods[i]
		if !metav1IsControlledBy(p, c) {
			continue
		}
		name := render.PodSecretVolume(p, volumePeerTLS)
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		num, ok := strings.CutSuffix(rest, "-peer")
		if !ok {
			continue
		}
		if g, err := strconv.Atoi(num); err == nil && g > newest {
			if peer, _, _ := builtinSecrets(c, g); peer == name {
				newest = g
			}
		}
	}
	return newest
}

// rolledOutTo: every member pod of c mounts the generation whose peer and server Secrets
// are named, and there are as many as the spec asks for (a member whose pod is being
// recreated has not moved yet). Built-in and cert-manager issuing both ask it.
func rolledOutTo(c *etcdv1beta2.EtcdCluster, pods []corev1.Pod, peer, server string) bool {
	live := 0
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || !metav1IsControlledBy(p, c) {
			continue
		}
		live++
		if render.PodSecretVolume(p, volumePeerTLS) != peer || render.PodSecretVolume(p, volumeServerTLS) != server {
			return false
		}
	}
	return live == 0 || live >= c.Spec.Size
}

// newestBuiltinGeneration is the newest generation whose peer and server Secrets exist
// and are c's (0: none). The Secrets are read one by one, never listed (the operator may
// get Secrets, not list them): generations are numbered from 1 and the operator deletes
// none, so the newest is the last of the run that starts at 1. A fresh cluster costs one
// read (generation 1 is not there).
func (r *Reconciler) newestBuiltinGeneration(ctx context.Context, c *etcdv1beta2.EtcdCluster) (int, error) {
	for g := 1; g <= maxBuiltinGenerationsProbed; g++ {
		peer, server, _ := builtinSecrets(c, g)
		for _, name := range []string{peer, server} {
			s, err := r.getOwnedSecret(ctx, c, name, builtinIssuing)
			if _, foreign := errors.AsType[*builtinTLSError](err); foreign || (err == nil && s == nil) {
				return g - 1, nil // missing or not c's: the run of c's generations ends before g
			}
			if err != nil {
				return 0, err
			}
		}
	}
	return maxBuiltinGenerationsProbed, nil
}

// maxBuiltinGenerationsProbed bounds the reads of newestBuiltinGeneration.
const maxBuiltinGenerationsProbed = 256

// caLostError: the CA Secret is gone while certificates it signed are in use.
type caLostError struct {
	// generation the member pods mount (0: none found).
	generation int
	err        error
}

func (e *caLostError) Error() string { return e.err.Error() }

// builtinNames are the names the cluster's certificates must carry. The client
// Service's cluster IPs come from the cache; fresh asks the API server when the cache
// has no Service yet (a cluster being created: its Service was created a moment ago).
func (r *Reconciler) builtinNames(ctx context.Context, c *etcdv1beta2.EtcdCluster, fresh bool) (certissue.Names, error) {
	n := certissue.Names{Cluster: c.Name, Namespace: c.Namespace, Domain: render.ClusterDomain(c, r.ClusterDomain)}
	var svc corev1.Service
	key := client.ObjectKey{Namespace: c.Namespace, Name: render.ClientServiceName(c)}
	err := r.Client.Get(ctx, key, &svc)
	if apierrors.IsNotFound(err) && fresh && r.APIReader != nil {
		err = r.APIReader.Get(ctx, key, &svc)
	}
	switch {
	case apierrors.IsNotFound(err):
		return n, nil
	case err != nil:
		return n, fmt.Errorf("get client service: %w", err)
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, s := range ips {
		if ip := net.ParseIP(s); ip != nil {
			n.ServiceIPs = append(n.ServiceIPs, ip)
		}
	}
	return n, nil
}

// secretReader reads built-in issuing's Secrets from the API server: the CA Secret is
// the state, and a cached copy one write behind would issue a generation twice or point
// members back at the one before (production never caches Secrets anyway,
// controllers.ApplyCacheOptions; a manager set up otherwise, as in tests, might).
func (r *Reconciler) secretReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// secretWriter is who writes a TLS Secret the cluster owns: built-in or cert-manager
// issuing, with the label it marks its Secrets with and its name in messages.
type secretWriter struct{ label, name string }

var (
	builtinIssuing     = secretWriter{LabelBuiltinTLS, "built-in issuing"}
	certManagerIssuing = secretWriter{LabelCertManagerTLS, "cert-manager issuing"}
)

// getOwnedSecret reads a Secret that writer (built-in or cert-manager issuing) writes:
// nil when there is none, an error when there is one the cluster does not control (never
// read nor overwritten).
func (r *Reconciler) getOwnedSecret(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, writer secretWriter) (*corev1.Secret, error) {
	var s corev1.Secret
	err := r.secretReader().Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %q: %w", name, err)
	}
	if !metav1IsControlledBy(&s, c) {
		return nil, &builtinTLSError{reason: etcdv1beta2.ReasonCertificateSecretInvalid,
			err: fmt.Errorf("secret %q exists and is not this cluster's: %s writes it; rename or delete it", name, writer.name)}
	}
	return &s, nil
}

// newOwnedSecret is a Secret name of c's that writer writes, holding data.
func (r *Reconciler) newOwnedSecret(c *etcdv1beta2.EtcdCluster, name string, writer secretWriter, data map[string][]byte) (*corev1.Secret, error) {
	labels := render.ClusterLabels(c.Name)
	labels[writer.label] = "true"
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels},
		Type: corev1.SecretTypeOpaque, Data: data}
	if err := controllerutil.SetControllerReference(c, s, r.Scheme); err != nil {
		return nil, err
	}
	return s, nil
}

// putOwnedSecret creates the Secret name that writer writes, or overwrites the cluster's
// own when its data differs.
func (r *Reconciler) putOwnedSecret(ctx context.Context, c *etcdv1beta2.EtcdCluster, name string, writer secretWriter, data map[string][]byte) error {
	cur, err := r.getOwnedSecret(ctx, c, name, writer)
	if err != nil {
		return err
	}
	if cur == nil {
		obj, err := r.newOwnedSecret(c, name, writer, data)
		if err != nil {
			return err
		}
		if err := r.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("create secret %q: %w", name, err)
		}
		return nil
	}
	if sameData(cur.Data, data) {
		return nil
	}
	cur.Data = data
	if err := r.Client.Update(ctx, cur); err != nil {
		return fmt.Errorf("update secret %q: %w", name, err)
	}
	return nil
}

// builtinState reads the cluster's CA Secret, creating a new CA when there is none and
// none was ever used. A CA Secret deleted after it signed the certificates the members
// run (the clients' Secret exists, or a member pod mounts a generation's Secrets) is not
// made anew: members would not trust a new CA, and the generation Secrets signed by the
// old one stay where they are. That is a caLostError: the user restores the Secret.
func (r *Reconciler) builtinState(ctx context.Context, c *etcdv1beta2.EtcdCluster, pods []corev1.Pod, st certissue.Settings, now time.Time) (certissue.State, error) {
	name := builtinCASecret(c)
	s, err := r.getOwnedSecret(ctx, c, name, builtinIssuing)
	if err != nil {
		return certissue.State{}, err
	}
	if s != nil {
		state, err := certissue.DecodeState(s.Data)
		if err != nil {
			return state, &builtinTLSError{reason: etcdv1beta2.ReasonCertificateSecretInvalid, err: fmt.Errorf("secret %q: %w", name, err)}
		}
		return state, nil
	}
	gen := mountedBuiltinGeneration(c, pods)
	mounted := gen > 0
	if !mounted {
		// No member pod mounts a generation (all pods lost, or a hibernated cluster
		// resuming): the newest generation whose Secrets are still there is the one
		// the members go on with, so they can be created at all.
		if gen, err = r.newestBuiltinGeneration(ctx, c); err != nil {
			return certissue.State{}, err
		}
	}
	client, err := r.getOwnedSecret(ctx, c, BuiltinClientSecret(c.Name), builtinIssuing)
	if err != nil {
		return certissue.State{}, err
	}
	if gen > 0 || client != nil {
		in := "the clients' Secret " + BuiltinClientSecret(c.Name) + " exists"
		switch {
		case mounted:
			in = fmt.Sprintf("members run generation %d, which it signed", gen)
		case gen > 0:
			in = fmt.Sprintf("generation %d's Secrets, which it signed, exist (no member pod mounts one now; members are created with them)", gen)
		}
		return certissue.State{}, &caLostError{generation: gen, err: &builtinTLSError{reason: etcdv1beta2.ReasonCASecretMissing,
			err: fmt.Errorf("the CA Secret %s is gone while %s: no new CA is made, as members and clients trust only the old one; "+
				"nothing is renewed until the Secret is restored (from a copy of it), and the members go on with the certificates they have", name, in)}}
	}
	state, err := certissue.NewState(c.Name, st, now)
	if err != nil {
		return state, &builtinTLSError{reason: etcdv1beta2.ReasonCertificateIssueFailed, err: err}
	}
	// A rotation asked for before the CA existed is this CA.
	state.RotationToken = c.Annotations[etcdv1beta2.AnnotationRotateCA]
	obj, err := r.newOwnedSecret(c, name, builtinIssuing, state.Encode())
	if err != nil {
		return state, err
	}
	if err := r.Client.Create(ctx, obj); err != nil {
		return state, fmt.Errorf("create secret %q: %w", name, err)
	}
	return state, nil
}

// writeBuiltinState writes the next state into the CA Secret, on the version read: a
// concurrent writer makes it fail and the reconcile start over.
func (r *Reconciler) writeBuiltinState(ctx context.Context, c *etcdv1beta2.EtcdCluster, next certissue.State) error {
	name := builtinCASecret(c)
	s, err := r.getOwnedSecret(ctx, c, name, builtinIssuing)
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("secret %q vanished", name)
	}
	if g, _ := strconv.Atoi(string(s.Data[certissue.StateGeneration])); g != next.Generation-1 {
		return fmt.Errorf("secret %q moved to generation %d meanwhile", name, g)
	}
	s.Data = next.Encode()
	if err := r.Client.Update(ctx, s); err != nil {
		return fmt.Errorf("update secret %q: %w", name, err)
	}
	return nil
}

// builtinLeaves reads the Secrets of state's generation, issuing those missing.
func (r *Reconciler) builtinLeaves(ctx context.Context, c *etcdv1beta2.EtcdCluster, state certissue.State, st certissue.Settings, now time.Time) (certissue.Leaves, error) {
	peerName, serverName, clientName := builtinSecrets(c, state.Generation)
	var l certissue.Leaves
	var missing []string
	read := func(name, certKey, keyKey, caKey string, kp *certissue.KeyPair) error {
		s, err := r.getOwnedSecret(ctx, c, name, builtinIssuing)
		if err != nil || s == nil {
			if s == nil && err == nil {
				missing = append(missing, name)
			}
			return err
		}
		*kp = certissue.KeyPair{CertPEM: s.Data[certKey], KeyPEM: s.Data[keyKey]}
		if len(l.Trust) == 0 {
			l.Trust = s.Data[caKey]
		}
		return nil
	}
	if err := errors.Join(
		read(peerName, peerCertKey, peerKeyKey, peerCAKey, &l.Peer),
		read(serverName, serverCertKey, serverKeyKey, serverCAKey, &l.Server),
		read(clientName, etcdadmin.ClientCertKey, etcdadmin.ClientKeyKey, etcdadmin.ClientCAKey, &l.Client),
	); err != nil {
		return l, err
	}
	if len(missing) == 0 {
		return l, nil
	}
	names, err := r.builtinNames(ctx, c, true)
	if err != nil {
		return l, err
	}
	issued, err := certissue.IssueLeaves(state, names, st, now)
	if err != nil {
		return l, &builtinTLSError{reason: etcdv1beta2.ReasonCertificateIssueFailed, err: err}
	}
	data := map[string]map[string][]byte{
		peerName:   {peerCertKey: issued.Peer.CertPEM, peerKeyKey: issued.Peer.KeyPEM, peerCAKey: issued.Trust},
		serverName: {serverCertKey: issued.Server.CertPEM, serverKeyKey: issued.Server.KeyPEM, serverCAKey: issued.Trust},
		clientName: {etcdadmin.ClientCertKey: issued.Client.CertPEM, etcdadmin.ClientKeyKey: issued.Client.KeyPEM, etcdadmin.ClientCAKey: issued.Trust},
	}
	for _, name := range missing {
		obj, err := r.newOwnedSecret(c, name, builtinIssuing, data[name])
		if err != nil {
			return l, err
		}
		if err := r.Client.Create(ctx, obj); err != nil {
			return l, fmt.Errorf("create secret %q: %w", name, err)
		}
	}
	// Read back as a whole: a generation whose Secrets were partly written before is
	// judged (and renewed if need be) by what is there.
	return r.builtinLeaves(ctx, c, state, st, now)
}

// syncClientSecret makes the Secret client, which writer writes, hold generation's
// client Secret.
func (r *Reconciler) syncClientSecret(ctx context.Context, c *etcdv1beta2.EtcdCluster, generation, client string, writer secretWriter) error {
	from, err := r.getOwnedSecret(ctx, c, generation, writer)
	if err != nil {
		return err
	}
	if from == nil {
		return fmt.Errorf("secret %q vanished", generation)
	}
	return r.putOwnedSecret(ctx, c, client, writer, from.Data)
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
