package bundlegen

import (
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// CheckStoredVersions applies the rule OLM enforces before it replaces an installed CRD
// with a newer bundle's: every version listed in the installed CRD's
// status.storedVersions (versions objects may still be persisted in) must remain in the
// new CRD's spec.versions, served or not. Dropping one would strand the objects stored
// in it; OLM fails the InstallPlan, and the API server refuses the update too. It also
// requires the new CRD to name the same resource, since comparing two different CRDs
// says nothing.
func CheckStoredVersions(installed, next *apiextensionsv1.CustomResourceDefinition) error {
	if installed.Name != next.Name {
		return fmt.Errorf("comparing CRD %s with a different CRD %s", installed.Name, next.Name)
	}
	keep := map[string]bool{}
	for _, v := range next.Spec.Versions {
		keep[v.Name] = true
	}
	var errs []error
	for _, v := range installed.Status.StoredVersions {
		if !keep[v] {
			errs = append(errs, fmt.Errorf("CRD %s: the new definition drops version %s, which is in the installed CRD's status.storedVersions %v", next.Name, v, installed.Status.StoredVersions))
		}
	}
	return errors.Join(errs...)
}

// StorageVersions returns, for a CRD as shipped (no status), the versions objects can
// be stored in once it is installed: the one marked storage. It is what
// status.storedVersions holds on a cluster that has only ever had this CRD, so a
// CRD's stored versions can be checked statically against a released bundle.
func StorageVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			out = append(out, v.Name)
		}
	}
	return out
}
