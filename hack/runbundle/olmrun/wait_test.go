package olmrun

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	return fakeClientWith(t, interceptor.Funcs{}, objs...)
}

func fakeClientWith(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.Subscription{}).WithInterceptorFuncs(funcs).Build()
}

func sub(plan string) *v1alpha1.Subscription {
	s := subscription("ns", "pkg", "alpha", "pkg.v2")
	s.Status.InstallPlanRef = &corev1.ObjectReference{Namespace: "ns", Name: plan}
	return s
}

func plan(name string, csvs ...string) *v1alpha1.InstallPlan {
	return &v1alpha1.InstallPlan{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       v1alpha1.InstallPlanSpec{ClusterServiceVersionNames: csvs, Approval: v1alpha1.ApprovalManual},
	}
}

func csv(name string, phase v1alpha1.ClusterServiceVersionPhase, reason v1alpha1.ConditionReason) *v1alpha1.ClusterServiceVersion {
	return &v1alpha1.ClusterServiceVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Status:     v1alpha1.ClusterServiceVersionStatus{Phase: phase, Reason: reason, Message: "from OLM"},
	}
}

func testOptions(c client.Client) Options {
	return Options{Client: c, Namespace: "ns", Timeout: 3 * time.Second, Logf: func(string, ...any) {}}
}

// The plan naming the CSV is approved and the wait ends when the CSV has Succeeded.
func TestApproveAndWaitApprovesThePlanForTheCSV(t *testing.T) {
	c := fakeClient(t, sub("install-1"), plan("install-1", "pkg.v2"), csv("pkg.v2", v1alpha1.CSVPhaseSucceeded, ""))
	if err := approveAndWait(context.Background(), testOptions(c), "pkg", "pkg.v2"); err != nil {
		t.Fatal(err)
	}
	ip := &v1alpha1.InstallPlan{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "install-1"}, ip); err != nil || !ip.Spec.Approved {
		t.Fatalf("plan approved = %v (err %v)", ip.Spec.Approved, err)
	}
}

// A plan for some other CSV is never approved: approving it would install what the user
// did not ask for. The wait times out and says what it saw.
func TestApproveAndWaitLeavesOtherPlansAlone(t *testing.T) {
	c := fakeClient(t, sub("install-1"), plan("install-1", "pkg.v3"))
	err := approveAndWait(context.Background(), testOptions(c), "pkg", "pkg.v2")
	if err == nil || !strings.Contains(err.Error(), "pkg.v3") {
		t.Fatalf("err = %v, want a timeout naming the plan's CSV", err)
	}
	ip := &v1alpha1.InstallPlan{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "install-1"}, ip); err != nil || ip.Spec.Approved {
		t.Fatalf("plan for another CSV approved = %v (err %v)", ip.Spec.Approved, err)
	}
}

// An unsupported OperatorGroup fails at once with OLM's message.
func TestApproveAndWaitStopsOnUnsupportedOperatorGroup(t *testing.T) {
	c := fakeClient(t, sub("install-1"), plan("install-1", "pkg.v2"),
		csv("pkg.v2", v1alpha1.CSVPhaseFailed, v1alpha1.CSVReasonUnsupportedOperatorGroup))
	o := testOptions(c)
	o.Timeout = time.Minute
	err := approveAndWait(context.Background(), o, "pkg", "pkg.v2")
	if err == nil || !strings.Contains(err.Error(), "failed: from OLM") || strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err = %v, want OLM's message at once, not a timeout", err)
	}
}

// OLM may replace a plan after it was approved (it hit a conflict while ensuring the
// plan and generated a new one, which waits for approval again). The wait follows the
// Subscription's reference and approves the new plan too; approving once and then only
// waiting timed out in CI.
func TestApproveAndWaitApprovesAPlanThatReplacedTheApprovedOne(t *testing.T) {
	c := fakeClientWith(t, interceptor.Funcs{
		Update: func(ctx context.Context, w client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := w.Update(ctx, obj, opts...); err != nil {
				return err
			}
			ip, ok := obj.(*v1alpha1.InstallPlan)
			if !ok || !ip.Spec.Approved {
				return nil
			}
			switch ip.Name {
			case "install-1": // OLM regenerates: the Subscription now names install-2
				s := &v1alpha1.Subscription{}
				if err := w.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pkg"}, s); err != nil {
					return err
				}
				s.Status.InstallPlanRef.Name = "install-2"
				return w.Status().Update(ctx, s)
			case "install-2": // only the current plan installs the CSV
				return w.Create(ctx, csv("pkg.v2", v1alpha1.CSVPhaseSucceeded, ""))
			}
			return nil
		},
	}, sub("install-1"), plan("install-1", "pkg.v2"), plan("install-2", "pkg.v2"))
	if err := approveAndWait(context.Background(), testOptions(c), "pkg", "pkg.v2"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"install-1", "install-2"} {
		ip := &v1alpha1.InstallPlan{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, ip); err != nil || !ip.Spec.Approved {
			t.Errorf("plan %s approved = %v (err %v)", name, ip.Spec.Approved, err)
		}
	}
}
