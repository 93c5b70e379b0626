package etcdcluster

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// The Services and budget are rendered once per change of what the chart reads: a
// second reconcile with the same inputs gets the cached render (copies, which it may
// change), a changed input (a spec field, a knob annotation) a new one, and a forgotten
// cluster nothing.
func TestRenderedServicesCache(t *testing.T) {
	rd, err := render.New()
	if err != nil {
		t.Fatal(err)
	}
	var s renderedServices
	c := statusCluster("cache", "3.6.16")
	key := clusterKey(c)
	in := func() render.Input { return render.Input{Cluster: c, ClusterDomain: "cluster.local"} }
	fresh := func() []client.Object {
		t.Helper()
		objs, err := rd.Render(in())
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}

	first, err := s.render(key, rd, in())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, fresh()) {
		t.Fatal("the first render differs from the chart's")
	}
	first[0].SetLabels(map[string]string{"changed": "by the caller"})
	// Mark the cached copy: only an answer from the cache carries the mark.
	s.m[key].objs[0].SetAnnotations(map[string]string{"from": "cache"})
	second, err := s.render(key, rd, in())
	if err != nil {
		t.Fatal(err)
	}
	if second[0].GetAnnotations()["from"] != "cache" {
		t.Fatal("same inputs rendered again instead of answered from the cache")
	}
	if second[0].GetLabels()["changed"] != "" {
		t.Fatal("a caller's change to a returned object reached the cache")
	}

	for _, change := range []struct {
		name string
		do   func()
	}{
		{"spec.size", func() { c.Spec.Size = 3 }},
		{"client Service type (knob annotation)", func() {
			c.Annotations = map[string]string{etcdv1beta2.ClientServiceTypeAnnotation: string(corev1.ServiceTypeNodePort)}
		}},
	} {
		change.do()
		got, err := s.render(key, rd, in())
		if err != nil {
			t.Fatal(err)
		}
		if got[0].GetAnnotations()["from"] == "cache" || !reflect.DeepEqual(got, fresh()) {
			t.Errorf("%s changed: the cached render was answered, not the chart's for the new inputs", change.name)
		}
	}

	s.forget(key)
	if len(s.m) != 0 {
		t.Fatalf("%d entries after forget", len(s.m))
	}
}
