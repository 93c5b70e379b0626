package etcdcluster

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/render"
)

// renderedServices keeps, per cluster, the Services and PodDisruptionBudget the chart
// rendered for it last, under a digest of everything the render read. ensureServices
// runs at every reconcile, also at rest, and rendering the chart (Helm's template engine
// over every template, then decoding the YAML) was two thirds of a reconcile's CPU and
// half of an idle operator's (BenchmarkScale at 100 clusters). The digest is of the
// chart's values (render.Values: every spec field and default the templates read) and
// the namespace (the release's); the chart itself is compiled into the operator, so
// another operator version starts with an empty cache. One entry per cluster, dropped
// with the rest of its memory when the cluster is deleted (memory.forget).
type renderedServices struct {
	mu sync.Mutex
	m  map[string]renderedEntry
}

type renderedEntry struct {
	digest [sha256.Size]byte
	objs   []client.Object
}

// render returns what r renders for in (no members), from the cache when the digest of
// its inputs is the one cached for key. The objects are copies: callers may change them.
func (s *renderedServices) render(key string, r *render.Renderer, in render.Input) ([]client.Object, error) {
	digest, ok := renderDigest(in)
	if ok {
		s.mu.Lock()
		e, hit := s.m[key]
		s.mu.Unlock()
		if hit && e.digest == digest {
			return copyObjects(e.objs), nil
		}
	}
	objs, err := r.Render(in)
	if err != nil || !ok {
		return objs, err
	}
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]renderedEntry{}
	}
	s.m[key] = renderedEntry{digest: digest, objs: copyObjects(objs)}
	s.mu.Unlock()
	return objs, nil
}

// renderDigest is a digest of all the render reads of in; ok is false when the values
// cannot be encoded (then nothing is cached, and the render says what is wrong).
func renderDigest(in render.Input) (digest [sha256.Size]byte, ok bool) {
	vals, err := render.Values(in)
	if err != nil {
		return digest, false
	}
	// encoding/json writes map keys sorted: equal values give equal bytes.
	b, err := json.Marshal(struct {
		Namespace string                 `json:"namespace"`
		Values    map[string]interface{} `json:"values"`
	}{in.Cluster.Namespace, vals})
	if err != nil {
		return digest, false
	}
	return sha256.Sum256(b), true
}

func copyObjects(objs []client.Object) []client.Object {
	out := make([]client.Object, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopyObject().(client.Object)
	}
	return out
}

func (s *renderedServices) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}
