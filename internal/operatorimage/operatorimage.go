// Package operatorimage knows which image the operator itself runs. Pods the operator
// creates to run its own subcommands (the restore init container, the recovery copy
// step, backup pods for PVC storage) must run that same build.
package operatorimage

// Default is the image those pods run when the operator is not told its own image
// (--operator-image, OPERATOR_IMAGE) and cannot read it from its pod: the bundle's
// image name.
const Default = "example.com/etcd-operator:v0.2.0"

// Or is image, or Default when image is empty.
func Or(image string) string {
	if image == "" {
		return Default
	}
	return image
}
