package etcdbackup

// The PVC path: the operator cannot mount a claim, so each backup into one runs in a
// short-lived pod of the operator's image (`etcd-operator backup`), whose termination
// message is the result copied into status.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backup"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	cmdbackup "github.com/etcd-operator/etcd-operator/internal/cmd/backup"
	"github.com/etcd-operator/etcd-operator/internal/operatorimage"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// Backup pods (storage type PVC).
const (
	// BackupPodContainer is the container of a backup pod.
	BackupPodContainer = "backup"
	// LabelBackup on a backup pod holds its EtcdBackup's name.
	LabelBackup = "etcd.database.coreos.com/backup"
	// backupMountPath is where the claim is mounted in the backup pod.
	backupMountPath = "/backup"
	// backupTLSMountPath is where the client TLS secret is mounted in the backup pod.
	backupTLSMountPath = "/etc/etcd-operator/tls"
	// backupPodStartGrace is how long a backup pod may take to start (scheduling, image
	// pull, volume attach) on top of the backup's own timeout before it is given up.
	backupPodStartGrace = 2 * time.Minute
)

// reconcilePVC runs one backup into a claim through a backup pod: it creates the pod
// when none runs, and when the pod has finished copies its result into status and
// deletes it. One pod at a time per EtcdBackup (a fixed name), so a retried reconcile
// never starts a second backup.
func (r *Reconciler) reconcilePVC(ctx context.Context, s *scope, now time.Time, interval time.Duration) (ctrl.Result, error) {
	eb := s.eb
	timeout := backupTimeout(eb)
	var pod corev1.Pod
	err := r.Get(ctx, client.ObjectKey{Namespace: eb.Namespace, Name: backupPodName(eb)}, &pod)
	if apierrors.IsNotFound(err) {
		// The cache holds only pods labelled render.OwnedSelector; a backup pod an older
		// operator started lacks the label: read it from the API and label it.
		err = r.unlabelledPod(ctx, client.ObjectKey{Namespace: eb.Namespace, Name: backupPodName(eb)}, eb, &pod)
	}
	if apierrors.IsNotFound(err) {
		// No pod: start one. Whether a backup is due was decided on s.eb, which Reconcile
		// read from the API server under the per-backup lock, so a cache lagging behind
		// our own status write of a just-finished backup cannot start a second one.
		target, err := r.resolveTarget(ctx, eb)
		if err != nil {
			return r.failed(ctx, s, interval, err, 0)
		}
		pod := r.backupPod(eb, target)
		if err := controllerutil.SetControllerReference(eb, pod, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			return r.failed(ctx, s, interval, &backupstorage.Error{Reason: etcdv1beta2.ReasonStorageError, Err: fmt.Errorf("create backup pod: %w", err)}, 0)
		}
		log.FromContext(ctx).Info("backup pod created", "pod", pod.Name, "claim", eb.Spec.PVC.ClaimName)
		// The pod's status changes wake us; this is only the deadline.
		return ctrl.Result{RequeueAfter: timeout + backupPodStartGrace}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if !metav1.IsControlledBy(&pod, eb) {
		// Never touched, but looked at again: its deletion does not wake this backup (it
		// names no owner we watch), and a periodic backup must resume once it is gone.
		r.fail(s, etcdv1beta2.ReasonBackupInvalidSpec,
			fmt.Sprintf("pod %s/%s exists and does not belong to this backup; the backup resumes once it is gone", pod.Namespace, pod.Name))
		return ctrl.Result{RequeueAfter: foreignPodRecheck}, nil
	}
	if pod.DeletionTimestamp != nil {
		return ctrl.Result{RequeueAfter: time.Second}, nil // the last one is going away
	}

	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
	default:
		deadline := pod.CreationTimestamp.Add(timeout + backupPodStartGrace)
		if now.Before(deadline) {
			return ctrl.Result{RequeueAfter: deadline.Sub(now)}, nil
		}
		if err := r.deletePod(ctx, &pod); err != nil {
			return ctrl.Result{}, err
		}
		return r.failed(ctx, s, interval, &backupstorage.Error{Reason: etcdv1beta2.ReasonTimeout, Err: fmt.Errorf(
			"backup pod %s did not finish within %v (backupPolicy.timeoutInSecond plus %v to start; phase %s)", pod.Name, timeout, backupPodStartGrace, pod.Status.Phase)},
			now.Sub(pod.CreationTimestamp.Time))
	}

	res, exit, resErr := podResult(&pod)
	if err := r.deletePod(ctx, &pod); err != nil {
		return ctrl.Result{}, err
	}
	took := podRunTime(&pod)
	if pod.Status.Phase == corev1.PodSucceeded {
		if resErr != nil {
			log.FromContext(ctx).Info("backup pod succeeded without a readable result", "pod", pod.Name, "error", resErr.Error())
		}
		res.Location = strings.Replace(res.Location, "file://"+backupMountPath, "pvc://"+eb.Spec.PVC.ClaimName, 1)
		return r.succeed(ctx, s, now, res, took)
	}
	reason, msg := res.Reason, res.Error
	if reason == "" {
		reason, msg = etcdv1beta2.ReasonBackupPodFailed, fmt.Sprintf("backup pod %s failed (%s)", pod.Name, exit)
		if res.Error != "" {
			// A result's error, or (FallbackToLogsOnError) the log's tail when the
			// program died before writing one: its last line says why.
			msg += ": " + render.LastMessageLine(res.Error)
		}
	}
	if podDialedExternal(&pod) && (reason == etcdv1beta2.ReasonSnapshotFailed || reason == etcdv1beta2.ReasonTimeout || reason == etcdv1beta2.ReasonTLSError) {
		return r.failed(ctx, s, interval, dialFailure(ctx, &backupTarget{}, reason, errors.New(msg)), took)
	}
	return r.failed(ctx, s, interval, &backupstorage.Error{Reason: reason, Err: errors.New(msg)}, took)
}

// podRunTime is how long a finished backup pod's container ran (0 if unknown).
func podRunTime(pod *corev1.Pod) time.Duration {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == BackupPodContainer && t != nil && !t.StartedAt.IsZero() {
			return t.FinishedAt.Sub(t.StartedAt.Time)
		}
	}
	return 0
}

// podResult reads the backup container's termination message. exit describes how the
// container ended, for messages.
func podResult(pod *corev1.Pod) (res backup.JobResult, exit string, err error) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != BackupPodContainer || cs.State.Terminated == nil {
			continue
		}
		t := cs.State.Terminated
		exit = fmt.Sprintf("exit code %d", t.ExitCode)
		if t.Reason != "" {
			exit += ", " + t.Reason
		}
		if t.Message == "" {
			return backup.JobResult{}, exit, errors.New("no termination message")
		}
		res, err = backup.ParseJobResult(t.Message)
		if err != nil {
			// FallbackToLogsOnError: the message is the log's tail, not JSON.
			return backup.JobResult{Error: t.Message}, exit, err
		}
		return res, exit, nil
	}
	return backup.JobResult{}, "container status unknown", errors.New("no terminated backup container")
}

// backupPodName is <backup>-backup, shortened with a hash to a valid label (pod names
// become hostnames).
func backupPodName(eb *etcdv1beta2.EtcdBackup) string {
	name := eb.Name + "-backup"
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(eb.Name))
	return strings.TrimRight(eb.Name[:45], "-.") + "-backup-" + hex.EncodeToString(sum[:])[:10]
}

// backupPod is the pod that runs one PVC backup: the operator's image, the `backup`
// subcommand, the claim at backupMountPath, the client TLS secret if any. It needs no
// API access, so no service account token is mounted.
func (r *Reconciler) backupPod(eb *etcdv1beta2.EtcdBackup, target *backupTarget) *corev1.Pod {
	image := operatorimage.Or(r.OperatorImage)
	p := policyOf(eb)
	opts := cmdbackup.Options{
		Endpoints: target.Endpoints,
		Dir:       backupMountPath,
		Key:       strings.TrimPrefix(path.Clean("/"+eb.Spec.PVC.Path), "/"),
		Timeout:   backupTimeout(eb),
	}
	if periodic(eb) {
		opts.Periodic, opts.MaxBackups = true, p.MaxBackups
		if age := p.MaxAge(); age > 0 {
			opts.MaxAge = age
		}
	}
	if c, _ := compressionOf(eb); c != backup.CompressionNone { // checked before the pod
		opts.Compression = string(c)
	}
	mounts := []corev1.VolumeMount{{Name: "backup", MountPath: backupMountPath}}
	volumes := []corev1.Volume{{Name: "backup", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: eb.Spec.PVC.ClaimName}}}}
	if target.TLSSecret != "" {
		opts.TLSDir = backupTLSMountPath
		mounts = append(mounts, corev1.VolumeMount{Name: "tls", MountPath: backupTLSMountPath, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: target.TLSSecret}}})
	}
	label := eb.Name
	if len(label) > 63 {
		label = backupPodName(eb)
	}
	deadline := int64((backupTimeout(eb) + backupPodStartGrace) / time.Second)
	// The member pods' "restricted" defaults; the fsGroup makes the claim writable.
	podSC, _ := render.PodSecurityContext(nil) // cannot fail without user input
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: backupPodName(eb), Namespace: eb.Namespace,
			Labels:      map[string]string{LabelBackup: label, render.LabelApp: render.AppOperatorPod, "app.kubernetes.io/managed-by": "etcd-operator"},
			Annotations: backupPodAnnotations(target),
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:        &deadline,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext:              podSC,
			Containers: []corev1.Container{{
				Name:    BackupPodContainer,
				Image:   image,
				Command: []string{render.OperatorCommand},
				Args:    append([]string{cmdbackup.Subcommand}, cmdbackup.Args(opts)...),
				// The result is JSON written there; should the program die before
				// writing it, the log's tail explains.
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				VolumeMounts:             mounts,
				Env:                      rootPasswordEnv(target), // auth.go
				SecurityContext:          render.ContainerSecurityContext(),
			}},
			Volumes: volumes,
		},
	}
	target.Inherit.ApplyTo(&pod.Spec)
	return pod
}
