// Package olmrun installs an operator bundle image through OLM the way
// `operator-sdk run bundle` and `run bundle-upgrade` do, without operator-sdk: it
// renders a file-based catalog that serves just the given bundle (plus, for an
// upgrade, the bundles installed before it), pushes it as a catalog image beside the
// bundle image, and drives OLM through its own objects — CatalogSource, OperatorGroup,
// Subscription with manual approval, InstallPlan — until the CSV has Succeeded.
//
// Everything it creates lives in the install namespace and is OLM's ordinary API, so a
// user removes it with kubectl (delete the Subscription, the CSV and the CatalogSource);
// the operator's custom resources and whatever they run are never touched.
package olmrun
