package planner

import (
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// planWaitUnhealthy is the grace rule: any voter down but still within its grace → Wait until
// the soonest grace ends: it may come back, and its grace decides, not an unrelated
// scale-up or upgrade step. (Past its grace the dead-member rule has replaced it already.)
func (v *view) planWaitUnhealthy() (Action, bool) {
	var soonest time.Duration
	var names []string
	for _, m := range v.voters {
		if v.alive(m) {
			continue
		}
		el, _ := v.downFor(m)
		r := remaining(v.grace(m), el)
		if soonest == 0 || r < soonest {
			soonest = r
		}
		names = append(names, m.Name)
	}
	if len(names) == 0 {
		return Action{}, false
	}
	return wait(v1beta2.ReasonMemberUnhealthy, "waiting for "+strings.Join(names, ", ")+" to recover (or for its grace to expire)", soonest), true
}
