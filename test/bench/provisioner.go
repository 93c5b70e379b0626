package bench

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
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

const (
	benchStorageClass      = "bench-local"
	benchProvisioner       = "bench.etcd-operator.io/local"
	annProvisionedBy       = "pv.kubernetes.io/provisioned-by"
	annSelectedNode        = "volume.kubernetes.io/selected-node"
	annDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"

	// provisionerResync bounds how long a failed create or delete waits for its retry
	// when no further event arrives.
	provisionerResync = 5 * time.Second
)

// startProvisioner runs until ctx ends; dataDir holds the volumes (the bench passes
// <bench dir>/pv; all nodes share the machine's file system, so a path exists on every node).
// It creates the bench's default StorageClass first and returns once its informers have
// synced; done is closed when it and its informers have stopped.
func startProvisioner(ctx context.Context, cfg *rest.Config, dataDir string, log func(string, ...any)) (done <-chan struct{}, err error) {
	if log == nil {
		log = func(string, ...any) {}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := ensureStorageClass(ctx, cs); err != nil {
		return nil, fmt.Errorf("storage class %s: %w", benchStorageClass, err)
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	pvcInf := f.Core().V1().PersistentVolumeClaims()
	pvInf := f.Core().V1().PersistentVolumes()
	scInf := f.Storage().V1().StorageClasses()
	p := &localProvisioner{
		cs: cs, dataDir: dataDir, log: log,
		pvcLister: pvcInf.Lister(), pvLister: pvInf.Lister(), scLister: scInf.Lister(),
		kick: make(chan struct{}, 1),
	}
	// Every change may make a claim provisionable or a volume deletable; one pass over
	// the caches handles them all, so events only wake the loop.
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.trigger() },
		UpdateFunc: func(any, any) { p.trigger() },
		DeleteFunc: func(any) { p.trigger() },
	}
	for _, inf := range []cache.SharedIndexInformer{pvcInf.Informer(), pvInf.Informer(), scInf.Informer()} {
		if _, err := inf.AddEventHandler(kick); err != nil {
			return nil, err
		}
	}
	f.StartWithContext(ctx)
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		f.Shutdown() // the sync only fails once ctx has ended, so this returns
		return nil, fmt.Errorf("provisioner informers: %w", err)
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		p.run(ctx)
		f.Shutdown()
	}()
	return ch, nil
}

// ensureStorageClass creates the bench's default StorageClass: WaitForFirstConsumer, so
// the scheduler picks the node first and the PV is a local volume pinned to it, like
// local disks on real machines (a pod keeps its data only on its node). An existing
// class of that name is left as it is.
func ensureStorageClass(ctx context.Context, cs kubernetes.Interface) error {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := v1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: benchStorageClass, Annotations: map[string]string{annDefaultStorageClass: "true"}},
		Provisioner:       benchProvisioner,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &mode,
	}
	_, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// localProvisioner is the bench's local volume provisioner. It serves PVCs of its own
// class (once the scheduler has selected a node) and PVCs naming a class that does not
// exist or no class (at once, with a hostPath PV usable from any node). PVs are created
// pre-bound through claimRef; the PV controller in kube-controller-manager completes the
// binding. Data lives under dataDir/<pv> and survives pod deletion and recreation; it is
// removed when a Released PV with reclaimPolicy Delete is deleted.
type localProvisioner struct {
	cs        kubernetes.Interface
	dataDir   string
	log       func(string, ...any)
	pvcLister corelisters.PersistentVolumeClaimLister
	pvLister  corelisters.PersistentVolumeLister
	scLister  storagelisters.StorageClassLister
	kick      chan struct{}
}

// trigger asks for a sync pass (coalesced).
func (p *localProvisioner) trigger() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *localProvisioner) run(ctx context.Context) {
	t := time.NewTicker(provisionerResync)
	defer t.Stop()
	for {
		if err := p.sync(ctx); err != nil && ctx.Err() == nil {
			p.log("provisioner: sync failed: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-t.C:
		}
	}
}

func (p *localProvisioner) pvDir(name string) string {
	return filepath.Join(p.dataDir, name)
}

func (p *localProvisioner) sync(ctx context.Context) error {
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
		if pv.Annotations[annProvisionedBy] != benchProvisioner || pv.Status.Phase != v1.VolumeReleased ||
			pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || pv.DeletionTimestamp != nil {
			continue
		}
		// The data goes first: should the delete fail, the PV stays Released and the
		// next pass retries both.
		if err := os.RemoveAll(p.pvDir(pv.Name)); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		err := p.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			if firstErr == nil {
				firstErr = fmt.Errorf("PV %s: %w", pv.Name, err)
			}
			continue
		}
		p.log("provisioner: deleted released volume %s", pv.Name)
	}
	return firstErr
}

func (p *localProvisioner) provision(ctx context.Context, pvc *v1.PersistentVolumeClaim) error {
	className := ptr.Deref(pvc.Spec.StorageClassName, "")
	var sc *storagev1.StorageClass
	if className != "" {
		var err error
		sc, err = p.scLister.Get(className)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if sc != nil && sc.Provisioner != benchProvisioner {
			return nil // someone else's class
		}
	}
	// Every node of the bench shares this machine's file system, so any selected node
	// can reach the directory; there is no node of someone else's to skip. A node's name
	// is also its kubernetes.io/hostname label (the bench sets --hostname-override).
	node := pvc.Annotations[annSelectedNode]
	if sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
		if node == "" {
			return nil // the scheduler has not picked a node yet
		}
	}
	name := "pvc-" + string(pvc.UID)
	if _, err := p.pvLister.Get(name); err == nil {
		return nil // created already; the PV controller binds it
	}
	dir := p.pvDir(name)
	// A local volume's directory must exist before the kubelet mounts it (the local
	// plugin bind-mounts it and does not create it). 0755, owned by the bench's user
	// (root): the kubelet's local volume plugin applies the pod's fsGroup on the first
	// mount that is not read-only (group set to fsGroup, g+rwx, setgid), so a non-root
	// pod with an fsGroup can write. The hostPath plugin does no such thing (it is not
	// "managed"), so a hostPath volume's directory is made 0777 for pods of any user.
	mode := os.FileMode(0o755)
	if node == "" {
		mode = 0o777
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dir, mode); err != nil { // exact mode, whatever the umask
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
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: benchProvisioner}},
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
				Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node},
			}}}},
		}}
	} else {
		pv.Spec.HostPath = &v1.HostPathVolumeSource{Path: dir, Type: ptr.To(v1.HostPathDirectoryOrCreate)}
	}
	_, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		p.log("provisioner: provisioned volume %s for %s/%s on node %q", name, pvc.Namespace, pvc.Name, node)
	}
	return err
}
