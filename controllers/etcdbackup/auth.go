package etcdbackup

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/backupstorage"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
)

// A backup of a cluster with etcd auth (spec.auth) takes its snapshot as the root user,
// whose password the cluster's root Secret holds. The password is read only to hand it to
// the etcd client (or, for a PVC backup, the pod gets it from the Secret as an
// environment variable): it is never logged nor written into a status or event.

// rootCredentials reads the root password of the target cluster ("" when it has no auth).
func (r *Reconciler) rootCredentials(ctx context.Context, namespace string, target *backupTarget) (user, password string, err error) {
	if target.RootSecret == "" {
		return "", "", nil
	}
	var s corev1.Secret
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: target.RootSecret}, &s); err != nil {
		return "", "", &backupstorage.Error{Reason: etcdv1beta2.ReasonSecretError, Err: fmt.Errorf("root Secret %s of the cluster's etcd auth: %w", target.RootSecret, err)}
	}
	pw := string(s.Data[etcdv1beta2.AuthPasswordKey])
	if pw == "" {
		return "", "", &backupstorage.Error{Reason: etcdv1beta2.ReasonSecretError, Err: fmt.Errorf("root Secret %s has no key %q", target.RootSecret, etcdv1beta2.AuthPasswordKey)}
	}
	return etcdadmin.RootUser, pw, nil
}

// checkRootSecret refuses a cluster whose root Secret is not for it
// (etcdv1beta2.CheckRootSecretOwner): its password would go to that cluster's members,
// which may run any image. A missing Secret is rootCredentials' to report.
func (r *Reconciler) checkRootSecret(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	name := clusterRootSecret(c)
	if name == "" {
		return nil
	}
	var s corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	if err := etcdv1beta2.CheckRootSecretOwner(c, &s); err != nil {
		return &backupstorage.Error{Reason: etcdv1beta2.ReasonSecretError, Err: fmt.Errorf("root Secret %s of EtcdCluster %s's etcd auth %w; nothing was dialled", name, c.Name, err)}
	}
	return nil
}

// rootPasswordEnv gives the backup pod the root password from the cluster's root Secret.
func rootPasswordEnv(target *backupTarget) []corev1.EnvVar {
	if target.RootSecret == "" {
		return nil
	}
	return []corev1.EnvVar{{Name: etcdadmin.PasswordEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: target.RootSecret}, Key: etcdv1beta2.AuthPasswordKey}}}}
}

// clusterRootSecret is the root Secret of a cluster with etcd auth ("" without).
func clusterRootSecret(c *etcdv1beta2.EtcdCluster) string {
	if on, secret := etcdv1beta2.AuthOf(c); on {
		return secret
	}
	// Auth stays on when the spec drops it (the operator does not turn it off).
	for _, cond := range c.Status.Conditions {
		if cond.Type == etcdv1beta2.ClusterConditionAuthEnabled && cond.Status == corev1.ConditionTrue {
			return etcdv1beta2.OperatorRootSecretName(c)
		}
	}
	return ""
}
