package operatorimage

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FromOwnPod returns the image the operator itself runs, read from its own pod (named by the
// downward API in POD_NAME/POD_NAMESPACE). Restored clusters' init containers must run the
// same build as the operator, whatever registry and tag an install retagged it to, and a
// pod's image is the one fact every install method (OLM, kustomize, Helm) gets right.
func FromOwnPod(ctx context.Context, c client.Reader, namespace, podName, container string) (string, error) {
	if namespace == "" || podName == "" {
		return "", fmt.Errorf("POD_NAME and POD_NAMESPACE are not set")
	}
	var pod corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: podName}, &pod); err != nil {
		return "", fmt.Errorf("read own pod %s/%s: %w", namespace, podName, err)
	}
	for _, ct := range pod.Spec.Containers {
		if ct.Name == container {
			return ct.Image, nil
		}
	}
	if len(pod.Spec.Containers) == 1 {
		return pod.Spec.Containers[0].Image, nil
	}
	return "", fmt.Errorf("own pod %s/%s has no container %q", namespace, podName, container)
}
