package olmimage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// CSV is what a catalog's channel entry takes from a bundle's ClusterServiceVersion,
// and the install modes it supports (which OperatorGroup can install it).
type CSV struct {
	Name         string
	Replaces     string
	Skips        []string
	SkipRange    string
	InstallModes []InstallMode
}

// InstallMode is one of the CSV's spec.installModes.
type InstallMode struct {
	Type      string `json:"type"`
	Supported bool   `json:"supported"`
}

// skipRangeAnnotation is the CSV annotation OLM reads a skipRange from.
const skipRangeAnnotation = "olm.skipRange"

// ReadCSV reads the one *.clusterserviceversion.yaml in dir/manifests.
func ReadCSV(dir string) (CSV, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil {
		return CSV{}, err
	}
	if len(matches) != 1 {
		return CSV{}, fmt.Errorf("%s/manifests: want one ClusterServiceVersion, found %d", dir, len(matches))
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		return CSV{}, err
	}
	var doc struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Replaces     string        `json:"replaces"`
			Skips        []string      `json:"skips"`
			InstallModes []InstallMode `json:"installModes"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return CSV{}, fmt.Errorf("%s: %w", matches[0], err)
	}
	if doc.Kind != "ClusterServiceVersion" || doc.Metadata.Name == "" {
		return CSV{}, fmt.Errorf("%s: not a named ClusterServiceVersion", matches[0])
	}
	return CSV{
		Name:         doc.Metadata.Name,
		Replaces:     doc.Spec.Replaces,
		Skips:        doc.Spec.Skips,
		SkipRange:    strings.TrimSpace(doc.Metadata.Annotations[skipRangeAnnotation]),
		InstallModes: doc.Spec.InstallModes,
	}, nil
}
