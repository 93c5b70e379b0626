package etcdcluster

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Ready member whose pod is gone or terminating is reported not Ready in one write
// before etcd is asked; with every Ready member's pod in place nothing is written.
func TestReportGoneMembers(t *testing.T) {
	patches := 0
	r, ec, c, _ := statusWriterFixture(t, countingStatusPatches(&patches))
	w := r.statusWriterFor(ec)
	ec.Status.Members.Ready = []string{"c-a", "c-b", "c-c"}
	ec.Status.Members.Unready = []string{"c-d"}
	ec.Status.Members.Leader = "c-a"
	if err := w.checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	ec = stored(t, c)
	patches = 0
	pod := func(name string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	all := map[string]*corev1.Pod{"c-a": pod("c-a"), "c-b": pod("c-b"), "c-c": pod("c-c")}

	r.reportGoneMembers(context.Background(), ec, all, r.statusWriterFor(ec))
	if patches != 0 {
		t.Fatalf("%d writes with every Ready member's pod in place, want 0", patches)
	}

	now := metav1.Now()
	terminating := pod("c-c")
	terminating.DeletionTimestamp = &now
	r.reportGoneMembers(context.Background(), ec, map[string]*corev1.Pod{"c-b": pod("c-b"), "c-c": terminating}, r.statusWriterFor(ec))
	got := stored(t, c).Status.Members
	if patches != 1 {
		t.Errorf("%d writes, want 1", patches)
	}
	if !slices.Equal(got.Ready, []string{"c-b"}) || !slices.Equal(got.Unready, []string{"c-d", "c-a", "c-c"}) || got.Leader != "" {
		t.Errorf("stored members %+v, want ready [c-b], unready [c-d c-a c-c], no leader", got)
	}
}
