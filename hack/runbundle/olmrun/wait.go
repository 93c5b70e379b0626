package olmrun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pollInterval is how often OLM's objects are read while waiting.
const pollInterval = time.Second

// approveAndWait is ApproveAndWait with o's client, namespace, timeout and log.
func approveAndWait(ctx context.Context, o Options, pkg, csv string) error {
	return ApproveAndWait(ctx, o.Client, o.Namespace, pkg, csv, o.Timeout, o.Logf)
}

// ApproveAndWait approves the InstallPlan the package's Subscription references for csv
// (only such a plan: one naming other CSVs is left alone) and waits until the CSV has
// Succeeded, as a user following `kubectl get subscription` would. The reference is
// re-read on every poll: OLM may replace a plan after it was approved (a conflict while
// it ensures the plan makes it generate a new one, which waits for approval again), so
// approving once and then only waiting can wait forever. On failure or timeout the error
// carries what OLM last said: the Subscription's conditions, the InstallPlan's phase and
// the CSV's phase, reason and message. c's scheme must know OLM's v1alpha1 types.
func ApproveAndWait(ctx context.Context, c client.Client, ns, pkg, csv string, timeout time.Duration, logf func(string, ...any)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		sub, err := findSubscription(ctx, c, ns, pkg)
		if err != nil || sub == nil {
			last = fmt.Sprintf("Subscription to %s: %v", pkg, err)
			return false, nil
		}
		last = "Subscription: " + subscriptionState(sub)
		if ref := sub.Status.InstallPlanRef; ref != nil {
			ip := &v1alpha1.InstallPlan{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, ip); err != nil {
				last += fmt.Sprintf("; InstallPlan %s: %v", ref.Name, err)
				return false, nil
			}
			last += fmt.Sprintf("; InstallPlan %s %s for %v", ip.Name, ip.Status.Phase, ip.Spec.ClusterServiceVersionNames)
			if slices.Contains(ip.Spec.ClusterServiceVersionNames, csv) && !ip.Spec.Approved {
				ip.Spec.Approved = true
				if err := c.Update(ctx, ip); err != nil {
					last += fmt.Sprintf(" (approve: %v)", err)
					return false, nil
				}
				logf("InstallPlan %s/%s for %s approved", ip.Namespace, ip.Name, csv)
			}
		}
		got := &v1alpha1.ClusterServiceVersion{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: csv}, got); apierrors.IsNotFound(err) {
			return false, nil
		} else if err != nil {
			last += fmt.Sprintf("; CSV %s: %v", csv, err)
			return false, nil
		}
		last += fmt.Sprintf("; CSV %s %s", csv, got.Status.Phase)
		if got.Status.Reason != "" || got.Status.Message != "" {
			last += fmt.Sprintf(" (%s: %s)", got.Status.Reason, got.Status.Message)
		}
		switch got.Status.Phase {
		case v1alpha1.CSVPhaseSucceeded:
			logf("CSV %s/%s Succeeded", ns, csv)
			return true, nil
		case v1alpha1.CSVPhaseFailed:
			// OLM retries some failures itself (a webhook not yet reachable); only an
			// unsupported install mode is final.
			if got.Status.Reason == v1alpha1.CSVReasonUnsupportedOperatorGroup {
				return false, fmt.Errorf("CSV %s failed: %s", csv, got.Status.Message)
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to succeed: %w; last seen: %s", csv, err, last)
	}
	return nil
}

// subscriptionState is the Subscription's state and its true conditions, briefly.
func subscriptionState(sub *v1alpha1.Subscription) string {
	parts := []string{string(sub.Status.State)}
	for _, c := range sub.Status.Conditions {
		if c.Status == "True" {
			parts = append(parts, fmt.Sprintf("%s (%s: %s)", c.Type, c.Reason, c.Message))
		}
	}
	return strings.Join(parts, ", ")
}
