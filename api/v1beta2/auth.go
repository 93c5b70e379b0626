package v1beta2

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// etcd authentication (v1 spec.auth). v1beta2 has no field for it: these annotations
// hold it, and convert to and from v1 without loss.
const (
	// AuthAnnotation "enabled" turns on etcd's user authentication with a root user
	// (v1 spec.auth). Once on, it stays on: the annotation may not be removed.
	AuthAnnotation = "etcd.database.coreos.com/auth"
	// AuthRootSecretAnnotation names a Secret in the cluster's namespace whose key
	// "password" is the root user's password (v1 spec.auth.rootSecret). Unset: the
	// operator creates <cluster>-etcd-root and keeps it.
	AuthRootSecretAnnotation = "etcd.database.coreos.com/auth-root-secret"
	// AuthEnabledValue is AuthAnnotation's only value.
	AuthEnabledValue = "enabled"
	// AuthPasswordKey is the root Secret's key holding the password.
	AuthPasswordKey = "password"
	// AuthRootSecretSuffix names the Secret the operator creates: <cluster>-etcd-root.
	AuthRootSecretSuffix = "-etcd-root"
	// AuthRootSecretForLabel on a Secret a user names as a root Secret says which
	// cluster (its name) may use it: the operator sends the password to that cluster's
	// members only. Without it (or an owner reference to the cluster) the Secret is not
	// used: whoever can create an EtcdCluster could otherwise name any Secret of the
	// namespace and have its password sent to members of their own image.
	AuthRootSecretForLabel = "etcd.database.coreos.com/root-secret-for"
)

// ClusterConditionAuthEnabled is True once etcd's authentication is on with the root user
// the operator uses; False with a reason while it is being turned on, is refused (a
// member down) or the root Secret is unusable. Not set on a cluster without spec.auth.
const ClusterConditionAuthEnabled ClusterConditionType = "AuthEnabled"

// Reasons of AuthEnabled.
const (
	// ReasonAuthEnabled: authentication is on; the operator's calls use the root user.
	ReasonAuthEnabled = "AuthEnabled"
	// ReasonAuthEnabling: the cluster is forming or the root user is being created.
	ReasonAuthEnabling = "AuthEnabling"
	// ReasonAuthMembersUnhealthy: turning auth on waits until every member is healthy.
	ReasonAuthMembersUnhealthy = "MembersUnhealthy"
	// ReasonAuthSecretError: the root Secret is missing, has no password or is not the
	// operator's to create.
	ReasonAuthSecretError = "AuthSecretError"
	// ReasonAuthRejected: etcd refused the root user's password from the Secret.
	ReasonAuthRejected = "AuthRejected"
)

// AuthOf says whether the cluster wants etcd authentication and which Secret holds the
// root password (the operator's own when the spec names none).
func AuthOf(c *EtcdCluster) (on bool, rootSecret string) {
	a := c.Annotations
	if a[AuthAnnotation] != AuthEnabledValue {
		return false, ""
	}
	if s := a[AuthRootSecretAnnotation]; s != "" {
		return true, s
	}
	return true, OperatorRootSecretName(c)
}

// OperatorRootSecretName is the root Secret the operator creates: <cluster>-etcd-root.
func OperatorRootSecretName(c *EtcdCluster) string { return c.Name + AuthRootSecretSuffix }

// ValidateAuth checks the auth annotations: what admission and the AuthEnabled condition
// report (naming the annotation).
func ValidateAuth(c *EtcdCluster) error {
	a := c.Annotations
	if v, ok := a[AuthAnnotation]; ok && v != AuthEnabledValue {
		return fmt.Errorf("annotation %s: %q is not %q", AuthAnnotation, v, AuthEnabledValue)
	}
	if s, ok := a[AuthRootSecretAnnotation]; ok {
		if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
			return fmt.Errorf("annotation %s: %q is not a Secret name: %v", AuthRootSecretAnnotation, s, errs)
		}
		if a[AuthAnnotation] != AuthEnabledValue {
			return fmt.Errorf("annotation %s needs %s: %s", AuthRootSecretAnnotation, AuthAnnotation, AuthEnabledValue)
		}
	}
	return nil
}

// CheckRootSecretOwner says why the Secret s may not be c's root Secret (nil when it may):
// a Secret another EtcdCluster or EtcdRestore controls (another cluster's
// <name>-etcd-root, say) is never used; otherwise the Secret must say it is for c: its
// AuthRootSecretForLabel names c, or it has an owner reference to c. The operator's own
// name is used when c controls it, or, with no controller at all, when labelled for c
// (one a failed restore let go of, say). A controller of another kind (a Secret syncer
// such as External Secrets or Sealed Secrets) does not decide: the label does. The
// password is sent to c's members, so a Secret is used only when its owner said it is
// for c.
func CheckRootSecretOwner(c *EtcdCluster, s metav1.Object) error {
	ctl := metav1.GetControllerOf(s)
	if ctl != nil && ctl.UID != c.UID && isEtcdObject(ctl) {
		return fmt.Errorf("is controlled by %s %s, not by this cluster: a root Secret another etcd object controls is never used", ctl.Kind, ctl.Name)
	}
	labelled := s.GetLabels()[AuthRootSecretForLabel] == c.Name
	if s.GetName() == OperatorRootSecretName(c) {
		if metav1.IsControlledBy(s, c) || (ctl == nil && labelled) {
			return nil
		}
		return fmt.Errorf("exists but is not this cluster's: the operator uses its own name only for a Secret this cluster controls, or for one without controller labelled %s=%s", AuthRootSecretForLabel, c.Name)
	}
	if labelled {
		return nil
	}
	for _, ref := range s.GetOwnerReferences() {
		if ref.UID == c.UID {
			return nil
		}
	}
	return fmt.Errorf("has no label %s=%s: a Secret the cluster names is used only when it says it is for this cluster", AuthRootSecretForLabel, c.Name)
}

// isEtcdObject: the reference is to an EtcdCluster or EtcdRestore (any version of this
// API group), whose root Secrets the operator manages.
func isEtcdObject(ref *metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == GroupVersion.Group && (ref.Kind == "EtcdCluster" || ref.Kind == "EtcdRestore")
}
