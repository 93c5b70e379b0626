package olm

import (
	"os/exec"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/testenv"
)

// kustomizeBin matches KUSTOMIZE in the Makefile (cached by hack/tools.sh gen).
const kustomizeBin = "bin/kustomize-v5.8.2"

// TestKustomizeManifestsAgree builds config/manifests with kustomize, as operator-sdk's
// flow would, and checks it yields the CSV base, every CRD, and a Deployment and
// ServiceAccount with the names the generated CSV uses: the generator applies
// config/default's namePrefix itself, and this catches it disagreeing with kustomize.
func TestKustomizeManifestsAgree(t *testing.T) {
	kustomize := testenv.Require(t, kustomizeBin)
	out, err := exec.Command(kustomize, "build", root+"/config/manifests").Output()
	if err != nil {
		t.Fatalf("kustomize build config/manifests: %v", err)
	}
	byKind := map[string][]string{}
	for _, o := range readObjects(t, out) {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o.GetName())
	}
	if len(byKind["ClusterServiceVersion"]) != 1 {
		t.Errorf("kustomize output has CSVs %v, want the one base", byKind["ClusterServiceVersion"])
	}
	if got, want := len(byKind["CustomResourceDefinition"]), len(configCRDs(t)); got != want {
		t.Errorf("kustomize output has %d CRDs, config/crd/bases %d", got, want)
	}
	csv := loadCommitted(t).CSV
	dep := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0]
	if d := byKind["Deployment"]; len(d) != 1 || d[0] != dep.Name {
		t.Errorf("kustomize Deployment %v, CSV deployment %q", d, dep.Name)
	}
	if sa := byKind["ServiceAccount"]; len(sa) != 1 || sa[0] != dep.Spec.Template.Spec.ServiceAccountName {
		t.Errorf("kustomize ServiceAccount %v, CSV service account %q", sa, dep.Spec.Template.Spec.ServiceAccountName)
	}
}
