package planner

import (
	"fmt"
	"testing"
	"time"
)

// The view matches members and pods the same whatever order they are listed in.
func TestPlanInputOrder(t *testing.T) {
	runCases(t, []tcase{
		{"input order does not matter", size(3), func() Observed {
			o := cluster(3)
			o.Members[0], o.Members[2] = o.Members[2], o.Members[0]
			o.Pods[0], o.Pods[1] = o.Pods[1], o.Pods[0]
			return o
		}, want{kind: Done}},
	})
}

func TestPlanDoesNotMutateInput(t *testing.T) {
	o := cluster(5)
	o.Members[0], o.Members[4] = o.Members[4], o.Members[0]
	crashloop(&o, 2, t0.Add(-time.Hour))
	before := fmt.Sprintf("%+v", o)
	Plan(desired(3), o)
	Summarize(desired(3), o, Plan(desired(3), o))
	if after := fmt.Sprintf("%+v", o); after != before {
		t.Fatal("Plan modified its input")
	}
}
