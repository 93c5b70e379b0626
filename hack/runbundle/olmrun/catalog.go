package olmrun

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/etcd-operator/etcd-operator/hack/catalog/olmimage"
	"github.com/etcd-operator/etcd-operator/internal/ociimage"
)

// pulledBundle is a bundle image read back into a directory.
type pulledBundle struct {
	image string
	dir   string
	csv   olmimage.CSV
	ann   map[string]string
}

// pullBundle fetches image and extracts its bundle into a directory under work.
func pullBundle(ctx context.Context, image, work string) (pulledBundle, error) {
	img, err := ociimage.Pull(ctx, image)
	if err != nil {
		return pulledBundle{}, err
	}
	dir, err := os.MkdirTemp(work, "bundle-")
	if err != nil {
		return pulledBundle{}, err
	}
	if err := olmimage.ExtractBundle(img, dir); err != nil {
		return pulledBundle{}, fmt.Errorf("%s: %w", image, err)
	}
	csv, err := olmimage.ReadCSV(dir)
	if err != nil {
		return pulledBundle{}, fmt.Errorf("%s: %w", image, err)
	}
	ann, err := olmimage.Annotations(dir)
	if err != nil {
		return pulledBundle{}, fmt.Errorf("%s: %w", image, err)
	}
	return pulledBundle{image: image, dir: dir, csv: csv, ann: ann}, nil
}

// channelOf is the channel run-bundle subscribes to: the bundle's default channel, or
// its first one.
func channelOf(b pulledBundle) string {
	if c := b.ann[olmimage.DefaultChannelAnnotation]; c != "" {
		return c
	}
	ch, _, _ := strings.Cut(b.ann[olmimage.ChannelsAnnotation], ",")
	return ch
}

// pushCatalog renders a file-based catalog serving bundles (oldest first) in channel,
// builds the catalog image with opm from opmDir and pushes it as image.
func pushCatalog(opmDir, channel, image string, bundles []pulledBundle, work string) error {
	c := olmimage.Catalog{Channel: channel}
	for _, b := range bundles {
		c.Bundles = append(c.Bundles, olmimage.Bundle{Dir: b.dir, Image: b.image})
	}
	dir, err := os.MkdirTemp(work, "catalog-")
	if err != nil {
		return err
	}
	_, img, err := olmimage.BuildCatalog(opmDir, c, dir)
	if err != nil {
		return err
	}
	if err := ociimage.Push(image, img); err != nil {
		return fmt.Errorf("push %s: %w", image, err)
	}
	return nil
}
