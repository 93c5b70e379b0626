package bench

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// TestProvisioner runs the provisioner against a real kube-apiserver (envtest: no
// scheduler, no kube-controller-manager). The test plays their parts: it sets the
// selected-node annotation the scheduler would set and the Released phase the PV
// controller would set.
func TestProvisioner(t *testing.T) {
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.EnvtestAssets(t)}
	cfg := testenv.StartEnvtest(t, env)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dataDir := filepath.Join(t.TempDir(), "pv")
	runCtx, stop := context.WithCancel(ctx)
	done, err := startProvisioner(runCtx, cfg, dataDir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("provisioner did not stop after its context ended")
		}
	})

	t.Run("StorageClass", func(t *testing.T) {
		sc, err := cs.StorageV1().StorageClasses().Get(ctx, benchStorageClass, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Provisioner != benchProvisioner || sc.Annotations[annDefaultStorageClass] != "true" ||
			ptr.Deref(sc.VolumeBindingMode, "") != storagev1.VolumeBindingWaitForFirstConsumer ||
			ptr.Deref(sc.ReclaimPolicy, "") != v1.PersistentVolumeReclaimDelete {
			t.Errorf("StorageClass %s = %+v", benchStorageClass, sc)
		}
		if err := ensureStorageClass(ctx, cs); err != nil {
			t.Errorf("second ensureStorageClass: %v", err)
		}
	})

	// Claims the provisioner must leave alone: its own class before the scheduler has
	// picked a node, and a class of another provisioner.
	other := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Provisioner: "example.com/other"}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waiting := createPVC(ctx, t, cs, "waiting", ptr.To(benchStorageClass), "2Gi")
	foreign := createPVC(ctx, t, cs, "foreign", ptr.To("other"), "1Gi")

	t.Run("NoClassGetsHostPath", func(t *testing.T) {
		// "" is "no class"; a nil class would get the default class from admission.
		for name, class := range map[string]string{"none": "", "missing": "manual"} {
			pvc := createPVC(ctx, t, cs, "hostpath-"+name, ptr.To(class), "512Mi")
			pv := waitPV(ctx, t, cs, pvc)
			dir := filepath.Join(dataDir, pv.Name)
			if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != dir ||
				ptr.Deref(pv.Spec.HostPath.Type, "") != v1.HostPathDirectoryOrCreate ||
				pv.Spec.Local != nil || pv.Spec.NodeAffinity != nil {
				t.Errorf("class %q: PV source/affinity = %+v / %+v, want hostPath %s", class, pv.Spec.PersistentVolumeSource, pv.Spec.NodeAffinity, dir)
			}
			checkPV(t, pv, pvc, class, "512Mi")
			checkDir(t, dir, 0o777)
		}
		// The passes that provisioned these had both claims above in their cache
		// (one informer delivers events in order), so these must still have no PV.
		for _, pvc := range []*v1.PersistentVolumeClaim{waiting, foreign} {
			if _, err := cs.CoreV1().PersistentVolumes().Get(ctx, "pvc-"+string(pvc.UID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("PVC %s: PV provisioned or lookup failed (%v); want none", pvc.Name, err)
			}
		}
	})

	var local *v1.PersistentVolume
	t.Run("LocalOnSelectedNode", func(t *testing.T) {
		patch := []byte(`{"metadata":{"annotations":{"` + annSelectedNode + `":"bench-node-2"}}}`)
		pvc, err := cs.CoreV1().PersistentVolumeClaims(waiting.Namespace).Patch(ctx, waiting.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		local = waitPV(ctx, t, cs, pvc)
		dir := filepath.Join(dataDir, local.Name)
		if local.Spec.Local == nil || local.Spec.Local.Path != dir || local.Spec.HostPath != nil {
			t.Errorf("PV source = %+v, want local %s", local.Spec.PersistentVolumeSource, dir)
		}
		want := &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{"bench-node-2"}}},
		}}}}
		if got := local.Spec.NodeAffinity; got == nil || got.String() != want.String() {
			t.Errorf("node affinity = %v, want %v", got, want)
		}
		checkPV(t, local, pvc, benchStorageClass, "2Gi")
		checkDir(t, dir, 0o755)
	})

	t.Run("ReleasedDeleted", func(t *testing.T) {
		if local == nil {
			t.Skip("no local PV (LocalOnSelectedNode failed)")
		}
		dir := filepath.Join(dataDir, local.Name)
		if err := os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		// A Released volume of ours with reclaim Retain: it and its data must stay.
		retainDir := filepath.Join(dataDir, "retained")
		if err := os.MkdirAll(retainDir, 0o755); err != nil {
			t.Fatal(err)
		}
		retained := &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "retained", Annotations: map[string]string{annProvisionedBy: benchProvisioner}},
			Spec: v1.PersistentVolumeSpec{
				Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: retainDir}},
			},
		}
		retained, err := cs.CoreV1().PersistentVolumes().Create(ctx, retained, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setReleased(ctx, t, cs, retained.Name)

		// What the PV controller does when the claim goes: the volume becomes Released.
		deletePVC(ctx, t, cs, waiting)
		setReleased(ctx, t, cs, local.Name)
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, local.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			// The pv-protection finalizer keeps it until a controller that does not run
			// here removes it; a deletion timestamp is the provisioner's part done.
			return err == nil && pv.DeletionTimestamp != nil, err
		})
		if err != nil {
			t.Fatalf("released PV %s not deleted: %v", local.Name, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("data dir of deleted PV: stat = %v, want not exist", err)
		}
		// The pass that deleted it saw the Retain volume Released too (set earlier).
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, retained.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("Retain PV: %v", err)
		} else if pv.DeletionTimestamp != nil {
			t.Errorf("Retain PV deleted at %v; want kept", pv.DeletionTimestamp)
		}
		if _, err := os.Stat(retainDir); err != nil {
			t.Errorf("Retain PV's data: %v", err)
		}
	})
}

func createPVC(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, class *string, size string) *v1.PersistentVolumeClaim {
	t.Helper()
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: class,
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc
}

// waitPV waits for the PV the provisioner names after the claim's UID.
func waitPV(ctx context.Context, t *testing.T, cs kubernetes.Interface, pvc *v1.PersistentVolumeClaim) *v1.PersistentVolume {
	t.Helper()
	var pv *v1.PersistentVolume
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		pv, err = cs.CoreV1().PersistentVolumes().Get(ctx, "pvc-"+string(pvc.UID), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("PV for PVC %s: %v", pvc.Name, err)
	}
	return pv
}

// checkPV checks what every PV of the provisioner carries.
func checkPV(t *testing.T, pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim, class, size string) {
	t.Helper()
	if q := pv.Spec.Capacity[v1.ResourceStorage]; q.Cmp(resource.MustParse(size)) != 0 {
		t.Errorf("%s: capacity %s, want %s", pv.Name, q.String(), size)
	}
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Namespace != pvc.Namespace || ref.Name != pvc.Name || ref.UID != pvc.UID || ref.Kind != "PersistentVolumeClaim" {
		t.Errorf("%s: claimRef %+v, want %s/%s uid %s", pv.Name, ref, pvc.Namespace, pvc.Name, pvc.UID)
	}
	if pv.Spec.StorageClassName != class || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete ||
		pv.Annotations[annProvisionedBy] != benchProvisioner {
		t.Errorf("%s: class %q reclaim %s provisioned-by %q; want %q Delete %q", pv.Name, pv.Spec.StorageClassName,
			pv.Spec.PersistentVolumeReclaimPolicy, pv.Annotations[annProvisionedBy], class, benchProvisioner)
	}
}

// checkDir checks the volume directory exists with the mode and owner the kubelet needs.
func checkDir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Errorf("volume dir: %v", err)
		return
	}
	if !fi.IsDir() || fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v, want directory %v", dir, fi.Mode(), mode)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() {
		t.Errorf("%s: owner %d, want %d", dir, st.Uid, os.Getuid())
	}
}

func setReleased(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = v1.VolumeReleased
	if _, err := cs.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deletePVC deletes a claim and, as kube-controller-manager would with no pod using it,
// drops its pvc-protection finalizer.
func deletePVC(ctx context.Context, t *testing.T, cs kubernetes.Interface, pvc *v1.PersistentVolumeClaim) {
	t.Helper()
	c := cs.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	if err := c.Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Patch(ctx, pvc.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}
