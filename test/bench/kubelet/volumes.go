package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// prepareVolumes materialises every pod volume as a directory under volRoot (or finds the
// backing directory of a PVC or hostPath) and returns volume name -> host directory.
// Content volumes (secret, configMap, downwardAPI, projected) are written once at pod
// start; unlike a real kubelet they are not refreshed when the source object changes.
func (pc *podContext) prepareVolumes(ctx context.Context, volRoot string) (map[string]string, error) {
	dirs := map[string]string{}
	for i := range pc.pod.Spec.Volumes {
		vol := &pc.pod.Spec.Volumes[i]
		dir := filepath.Join(volRoot, vol.Name)
		var files map[string]volFile
		var err error
		switch {
		case vol.EmptyDir != nil:
			err = os.MkdirAll(dir, 0o777)
		case vol.HostPath != nil:
			dir = vol.HostPath.Path
			if t := vol.HostPath.Type; t != nil && *t == v1.HostPathDirectoryOrCreate {
				err = os.MkdirAll(dir, 0o755)
			}
		case vol.PersistentVolumeClaim != nil:
			dir, err = pc.pvcDir(ctx, vol.PersistentVolumeClaim.ClaimName)
		case vol.Secret != nil:
			files, err = pc.secretFiles(ctx, vol.Secret.SecretName, vol.Secret.Items, vol.Secret.Optional, mode(vol.Secret.DefaultMode))
		case vol.ConfigMap != nil:
			files, err = pc.configMapFiles(ctx, vol.ConfigMap.Name, vol.ConfigMap.Items, vol.ConfigMap.Optional, mode(vol.ConfigMap.DefaultMode))
		case vol.DownwardAPI != nil:
			files, err = pc.downwardFiles(vol.DownwardAPI.Items, mode(vol.DownwardAPI.DefaultMode))
		case vol.Projected != nil:
			files, err = pc.projectedFiles(ctx, vol.Projected)
		default:
			err = fmt.Errorf("volume type not supported by the bench kubelet")
		}
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		if files != nil {
			if err := writeVolumeFiles(dir, files); err != nil {
				return nil, fmt.Errorf("volume %q: %w", vol.Name, err)
			}
		}
		dirs[vol.Name] = dir
	}
	return dirs, nil
}

// containerMounts turns a container's volumeMounts into bind mounts, parents first.
func containerMounts(c *v1.Container, dirs map[string]string, env func(string) (string, bool)) ([]mountSpec, error) {
	var out []mountSpec
	for _, vm := range c.VolumeMounts {
		src, ok := dirs[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: no such volume", vm.Name)
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = expandVars(vm.SubPathExpr, env)
		}
		if sub != "" {
			if filepath.IsAbs(sub) || strings.Contains(filepath.Clean(sub), "..") {
				return nil, fmt.Errorf("volumeMount %q: bad subPath %q", vm.Name, sub)
			}
			src = filepath.Join(src, sub)
			if _, err := os.Stat(src); os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, mountSpec{Source: src, Target: filepath.Clean(vm.MountPath), ReadOnly: vm.ReadOnly})
	}
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Count(out[i].Target, "/") < strings.Count(out[j].Target, "/")
	})
	return out, nil
}

func (pc *podContext) pvcDir(ctx context.Context, claim string) (string, error) {
	pvc, err := pc.clientset.CoreV1().PersistentVolumeClaims(pc.pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("PVC %s is not bound yet", claim)
	}
	pv, err := pc.clientset.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	var dir string
	switch {
	case pv.Spec.Local != nil:
		dir = pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		dir = pv.Spec.HostPath.Path
	default:
		return "", fmt.Errorf("PV %s is neither local nor hostPath", pv.Name)
	}
	return dir, os.MkdirAll(dir, 0o777)
}

type volFile struct {
	data []byte
	mode os.FileMode
}

func mode(p *int32) os.FileMode {
	if p == nil {
		return 0o644
	}
	return os.FileMode(*p)
}

func keyToPath(data map[string][]byte, items []v1.KeyToPath, def os.FileMode, optional bool, what string) (map[string]volFile, error) {
	out := map[string]volFile{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = volFile{v, def}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("key %q not found in %s", it.Key, what)
		}
		m := def
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		out[it.Path] = volFile{v, m}
	}
	return out, nil
}

func (pc *podContext) secretFiles(ctx context.Context, name string, items []v1.KeyToPath, opt *bool, def os.FileMode) (map[string]volFile, error) {
	optional := opt != nil && *opt
	s, err := pc.clientset.CoreV1().Secrets(pc.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && optional {
			return map[string]volFile{}, nil
		}
		return nil, err
	}
	return keyToPath(s.Data, items, def, optional, "secret "+name)
}

func (pc *podContext) configMapFiles(ctx context.Context, name string, items []v1.KeyToPath, opt *bool, def os.FileMode) (map[string]volFile, error) {
	optional := opt != nil && *opt
	cm, err := pc.clientset.CoreV1().ConfigMaps(pc.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && optional {
			return map[string]volFile{}, nil
		}
		return nil, err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyToPath(data, items, def, optional, "configMap "+name)
}

func (pc *podContext) downwardFiles(items []v1.DownwardAPIVolumeFile, def os.FileMode) (map[string]volFile, error) {
	out := map[string]volFile{}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = pc.fieldValue(it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			c := findContainer(pc.pod, it.ResourceFieldRef.ContainerName)
			if c == nil {
				return nil, fmt.Errorf("resourceFieldRef: no container %q", it.ResourceFieldRef.ContainerName)
			}
			v, err = pc.resourceValue(c, it.ResourceFieldRef)
		}
		if err != nil {
			return nil, err
		}
		m := def
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		out[it.Path] = volFile{[]byte(v), m}
	}
	return out, nil
}

func (pc *podContext) projectedFiles(ctx context.Context, p *v1.ProjectedVolumeSource) (map[string]volFile, error) {
	def := mode(p.DefaultMode)
	out := map[string]volFile{}
	merge := func(m map[string]volFile) {
		for k, v := range m {
			out[k] = v
		}
	}
	for _, src := range p.Sources {
		switch {
		case src.Secret != nil:
			m, err := pc.secretFiles(ctx, src.Secret.Name, src.Secret.Items, src.Secret.Optional, def)
			if err != nil {
				return nil, err
			}
			merge(m)
		case src.ConfigMap != nil:
			m, err := pc.configMapFiles(ctx, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, def)
			if err != nil {
				return nil, err
			}
			merge(m)
		case src.DownwardAPI != nil:
			m, err := pc.downwardFiles(src.DownwardAPI.Items, def)
			if err != nil {
				return nil, err
			}
			merge(m)
		case src.ServiceAccountToken != nil:
			tok, err := pc.serviceAccountToken(ctx, src.ServiceAccountToken)
			if err != nil {
				return nil, err
			}
			out[src.ServiceAccountToken.Path] = volFile{[]byte(tok), def}
		default:
			return nil, fmt.Errorf("projected source not supported by the bench kubelet")
		}
	}
	return out, nil
}

// serviceAccountToken requests a token bound to the pod, as the kubelet does for
// projected serviceAccountToken sources. It is not rotated (default lifetime 1h, or the
// requested expirationSeconds; the apiserver may extend it).
func (pc *podContext) serviceAccountToken(ctx context.Context, src *v1.ServiceAccountTokenProjection) (string, error) {
	sa := pc.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef: &authv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pc.pod.Name, UID: pc.pod.UID,
		},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := pc.clientset.CoreV1().ServiceAccounts(pc.pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for service account %s: %w", sa, err)
	}
	return tr.Status.Token, nil
}

// writeVolumeFiles replaces dir's content with files (paths may contain subdirectories).
func writeVolumeFiles(dir string, files map[string]volFile) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for rel, f := range files {
		clean := filepath.Clean(rel)
		if filepath.IsAbs(clean) || strings.HasPrefix(clean, "..") {
			return fmt.Errorf("bad item path %q", rel)
		}
		p := filepath.Join(dir, clean)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
		// WriteFile's mode is filtered by the umask; the volume's mode is exact.
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
	}
	return nil
}
