package render

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// NonRootID is the user and group the operator's pods run as unless a user's pod
// securityContext says otherwise: the non-root user of distroless images. etcd and the
// operator's own binary need no privilege, only a writable data directory, which the
// fsGroup of the same ID gives them on an emptyDir or a claim.
const NonRootID = 65532

// PodSecurityContext is the pod securityContext of the operator's pods: what the Pod
// Security "restricted" profile asks of a pod (non-root, RuntimeDefault seccomp) and an
// fsGroup for the volumes, with every field the user set in user (spec.pod.securityContext,
// nil for pods with no user settings) taking precedence. A user who sets runAsUser gets no
// default runAsGroup, and one who runs as root (runAsUser 0) without saying runAsNonRoot
// is not contradicted by the default.
func PodSecurityContext(user *corev1.PodSecurityContext) (*corev1.PodSecurityContext, error) {
	merged := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](NonRootID),
		RunAsGroup:     ptr.To[int64](NonRootID),
		FSGroup:        ptr.To[int64](NonRootID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if user == nil {
		return merged, nil
	}
	// Overlaying the user's JSON keeps exactly the fields the user set, whatever fields
	// PodSecurityContext has or gains.
	raw, err := json.Marshal(user)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, merged); err != nil {
		return nil, err
	}
	if user.RunAsUser != nil {
		// The user chose who runs etcd; the image's group for that user is theirs too.
		if user.RunAsGroup == nil {
			merged.RunAsGroup = nil
		}
		if user.RunAsNonRoot == nil && *user.RunAsUser == 0 {
			merged.RunAsNonRoot = nil
		}
	}
	return merged, nil
}

// ContainerSecurityContext is the securityContext of every container the operator runs:
// the container-level part of the "restricted" profile, which no pod setting can express.
func ContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}
