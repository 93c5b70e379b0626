package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/utils/ptr"
)

const (
	provisionerName        = "bench.etcd-operator.io/local"
	annProvisionedBy       = "pv.kubernetes.io/provisioned-by"
	annSelectedNode        = "volume.kubernetes.io/selected-node"
	annDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"
)

// ensureStorageClass creates the bench's default StorageClass: WaitForFirstConsumer, so
// the scheduler picks the node first and the PV is a local volume pinned to it, like
// local disks on real machines (a pod keeps its data only on its node).
func (k *Kubelet) ensureStorageClass(ctx context.Context) error {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := v1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: k.cfg.StorageClassName, Annotations: map[string]string{annDefaultStorageClass: "true"}},
		Provisioner:       provisionerName,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &mode,
	}
	_, err := k.cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// provisioner is the bench's local volume provisioner. It serves PVCs of its own class
// (once the scheduler has selected a node) and PVCs naming a class that does not exist or
// no class (at once, with a hostPath PV usable from any node). PVs are created pre-bound
// through claimRef; the real PV controller in kube-controller-manager completes the
// binding. Data lives under RootDir/pv/<pv> and survives pod deletion and recreation;
// it is removed when a Released PV with reclaimPolicy Delete is deleted.
type provisioner struct {
	k         *Kubelet
	pvcLister corelisters.PersistentVolumeClaimLister
	pvLister  corelisters.PersistentVolumeLister
	scLister  storagelisters.StorageClassLister
	kick      chan struct{}
}

func (p *provisioner) trigger() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *provisioner) run(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		if err := p.sync(ctx); err != nil && ctx.Err() == nil {
			p.k.log.Info("provisioner sync failed", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-t.C:
		}
	}
}

func (p *provisioner) pvDir(name string) string {
	return filepath.Join(p.k.cfg.RootDir, "pv", name)
}

func (p *provisioner) sync(ctx context.Context) error {
	pvcs, err := p.pvcLister.List(labels.Everything())
	if err != nil {
		return err
	}
	var firstErr error
	for _, pvc := range pvcs {
		if pvc.Spec.VolumeName != "" || (pvc.Status.Phase != v1.ClaimPending && pvc.Status.Phase != "") || pvc.DeletionTimestamp != nil {
			continue
		}
		if err := p.provision(ctx, pvc); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("PVC %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
	}
	pvs, err := p.pvLister.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pv := range pvs {
		if pv.Annotations[annProvisionedBy] != provisionerName || pv.Status.Phase != v1.VolumeReleased ||
			pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || pv.DeletionTimestamp != nil {
			continue
		}
		if err := os.RemoveAll(p.pvDir(pv.Name)); err != nil && firstErr == nil {
			firstErr = err
		}
		err := p.k.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) && firstErr == nil {
			firstErr = err
		}
		p.k.log.Info("deleted released volume", "pv", pv.Name)
	}
	return firstErr
}

func (p *provisioner) provision(ctx context.Context, pvc *v1.PersistentVolumeClaim) error {
	className := ptr.Deref(pvc.Spec.StorageClassName, "")
	var sc *storagev1.StorageClass
	if className != "" {
		var err error
		sc, err = p.scLister.Get(className)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if sc != nil && sc.Provisioner != provisionerName {
			return nil // someone else's class
		}
	}
	node := pvc.Annotations[annSelectedNode]
	if sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
		if node == "" {
			return nil // the scheduler has not picked a node yet
		}
	}
	if node != "" {
		if _, ours := p.k.nodes[node]; !ours {
			return nil
		}
	}
	name := "pvc-" + string(pvc.UID)
	if _, err := p.pvLister.Get(name); err == nil {
		return nil // created already; the PV controller binds it
	}
	dir := p.pvDir(name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	size := resource.MustParse("1Gi")
	if q, ok := pvc.Spec.Resources.Requests[v1.ResourceStorage]; ok {
		size = q
	}
	reclaim := v1.PersistentVolumeReclaimDelete
	if sc != nil && sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: provisionerName}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              className,
			VolumeMode:                    ptr.To(v1.PersistentVolumeFilesystem),
			ClaimRef: &v1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion,
			},
		},
	}
	if node != "" {
		pv.Spec.Local = &v1.LocalVolumeSource{Path: dir}
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
				Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{node},
			}}}},
		}}
	} else {
		pv.Spec.HostPath = &v1.HostPathVolumeSource{Path: dir, Type: ptr.To(v1.HostPathDirectoryOrCreate)}
	}
	_, err := p.k.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		p.k.log.Info("provisioned volume", "pv", name, "pvc", pvc.Namespace+"/"+pvc.Name, "node", node)
	}
	return err
}
