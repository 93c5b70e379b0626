package olmimage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Catalog is one package's file-based catalog: its bundles, in upgrade order, and the
// channel they form.
type Catalog struct {
	// Channel every bundle is entered in; it must be one of each bundle's channels.
	Channel string
	// Bundles, oldest first. All are of one package; the newest one's default channel
	// is the package's.
	Bundles []Bundle
}

// Render writes the catalog as YAML documents: olm.package, olm.channel and one
// olm.bundle per bundle as `opm render <dir>` makes it, with the bundle's image
// reference filled in (opm leaves it empty when it renders a directory, and a catalog
// whose bundles have no image cannot be installed from). The channel entries follow
// each CSV's replaces, skips and skipRange, so upgrades go the way the bundles say.
// opm is the opm binary.
func Render(opm string, c Catalog) (pkg string, fbc []byte, err error) {
	if len(c.Bundles) == 0 || c.Channel == "" {
		return "", nil, errors.New("a catalog needs a channel and at least one bundle")
	}
	var (
		defaultChannel string
		entries        []map[string]any
		bundles        [][]byte
		names          []string
	)
	for _, b := range c.Bundles {
		if b.Image == "" {
			return "", nil, fmt.Errorf("bundle %s: no image reference", b.Dir)
		}
		ann, err := Annotations(b.Dir)
		if err != nil {
			return "", nil, err
		}
		if pkg == "" {
			pkg = ann[PackageAnnotation]
		} else if p := ann[PackageAnnotation]; p != pkg {
			return "", nil, fmt.Errorf("bundle %s is of package %q, not %q", b.Dir, p, pkg)
		}
		if !slices.Contains(strings.Split(ann[ChannelsAnnotation], ","), c.Channel) {
			return "", nil, fmt.Errorf("bundle %s is not in channel %q (its channels: %s)", b.Dir, c.Channel, ann[ChannelsAnnotation])
		}
		defaultChannel = ann[DefaultChannelAnnotation]
		csv, err := ReadCSV(b.Dir)
		if err != nil {
			return "", nil, err
		}
		if slices.Contains(names, csv.Name) {
			return "", nil, fmt.Errorf("bundle %s: %s is listed twice", b.Dir, csv.Name)
		}
		names = append(names, csv.Name)
		entry := map[string]any{"name": csv.Name}
		if csv.Replaces != "" {
			entry["replaces"] = csv.Replaces
		}
		if len(csv.Skips) > 0 {
			entry["skips"] = csv.Skips
		}
		if csv.SkipRange != "" {
			entry["skipRange"] = csv.SkipRange
		}
		entries = append(entries, entry)
		doc, err := renderBundle(opm, b, csv.Name)
		if err != nil {
			return "", nil, err
		}
		bundles = append(bundles, doc)
	}
	if defaultChannel == "" {
		defaultChannel = c.Channel
	}
	var out bytes.Buffer
	for _, doc := range []any{
		map[string]any{"schema": "olm.package", "name": pkg, "defaultChannel": defaultChannel},
		map[string]any{"schema": "olm.channel", "package": pkg, "name": c.Channel, "entries": entries},
	} {
		y, err := yaml.Marshal(doc)
		if err != nil {
			return "", nil, err
		}
		out.WriteString("---\n")
		out.Write(y)
	}
	for _, y := range bundles {
		out.WriteString("---\n")
		out.Write(y)
	}
	return pkg, out.Bytes(), nil
}

// renderBundle runs `opm render dir -o json` and returns its one olm.bundle as YAML
// with image set to b.Image.
func renderBundle(opm string, b Bundle, csvName string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(opm, "render", b.Dir, "-o", "json")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("opm render %s: %w\n%s", b.Dir, err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("opm render %s: %w", b.Dir, err)
		}
		docs = append(docs, d)
	}
	if len(docs) != 1 || docs[0]["schema"] != "olm.bundle" || docs[0]["name"] != csvName {
		return nil, fmt.Errorf("opm render %s: want one olm.bundle %s, got %d documents", b.Dir, csvName, len(docs))
	}
	doc := docs[0]
	doc["image"] = b.Image
	return yaml.Marshal(doc)
}
