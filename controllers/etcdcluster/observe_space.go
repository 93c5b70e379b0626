package etcdcluster

import (
	"context"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/api/v1beta2"
	"github.com/etcd-operator/etcd-operator/internal/etcdadmin"
	"github.com/etcd-operator/etcd-operator/internal/render"
)

// What etcd says about the cluster's database: its size against the quota, and the
// alarms it raised (NOSPACE when a member's backend hit the quota, CORRUPT when the
// corruption check found a member that differs from its peers).

// spaceObservation is one observation's view of the database. The zero value is what an
// observation without answers has: nothing known, nothing reported.
type spaceObservation struct {
	// alarmsKnown: the alarm list was read; alarms is then complete (empty: none).
	alarmsKnown bool
	alarms      []etcdadmin.Alarm
	// sizesKnown: at least one member answered its status; the sizes are then the
	// largest any answering member reported. The largest, not the leader's: each member
	// keeps its own backend, and the first to reach the quota raises NOSPACE for all.
	sizesKnown bool
	dbSize     int64
	dbInUse    int64
	// quota is the largest quota-backend-bytes a member reported (etcd >= 3.6); 0 when
	// none did, and the configured one is used instead.
	quota int64
}

// alarmListTimeout bounds reading the alarm list. The list is replicated state, so it
// needs a quorum; without one the observation goes on without it.
const alarmListTimeout = 5 * time.Second

// askSpace takes the sizes from the members' status answers and, when the cluster has a
// quorum (its linearizable member list was answered), the alarms: none when at least one
// member answered its status and none that answered may report one
// (etcdadmin.MayReportAlarm), else the cluster's alarm list. The list is a raft
// proposal, written to every member's WAL: read at every observation it was the only
// write among an observation's calls, and under churn one of its slowest answers (issue
// 32). With no status answered, nothing is concluded about alarms (the metrics keep
// their last values) rather than asking the list of members that did not answer in time.
func askSpace(ctx context.Context, admin *etcdadmin.Admin, statuses []etcdadmin.EndpointStatus, quorum bool) spaceObservation {
	s := spaceSizes(statuses)
	if !quorum || !s.sizesKnown {
		return s
	}
	if !slices.ContainsFunc(statuses, etcdadmin.EndpointStatus.MayReportAlarm) {
		s.alarmsKnown = true
		return s
	}
	actx, cancel := context.WithTimeout(ctx, alarmListTimeout)
	defer cancel()
	alarms, err := admin.Alarms(actx)
	if err != nil {
		log.FromContext(ctx).V(1).Info("alarm list unavailable", "err", err.Error())
		return s
	}
	s.alarmsKnown, s.alarms = true, alarms
	return s
}

// spaceSizes takes the largest database size, in-use size and quota the answering
// members reported.
func spaceSizes(statuses []etcdadmin.EndpointStatus) spaceObservation {
	var s spaceObservation
	for _, st := range statuses {
		if st.Err != nil {
			continue
		}
		s.sizesKnown = true
		s.dbSize = max(s.dbSize, st.DBSize)
		s.dbInUse = max(s.dbInUse, st.DBSizeInUse)
		s.quota = max(s.quota, st.DBSizeQuota)
	}
	return s
}

// A cluster whose largest member database is at least nearQuotaShare of its quota is
// observed every nearQuotaResync instead of every steadyResync: nothing in Kubernetes
// wakes the operator when etcd raises NOSPACE (the member pods stay Ready), and from
// the alarm on the cluster refuses writes, so the remediation should not wait out a
// 30 s resync. Clusters far from their quota cost nothing more.
const (
	nearQuotaShare  = 0.8
	nearQuotaResync = 5 * time.Second
)

// nearQuota says whether the observed database size is within reach of the quota (the
// one a member reported, else the configured one).
func (s spaceObservation) nearQuota(c *etcdv1beta2.EtcdCluster) bool {
	if !s.sizesKnown {
		return false
	}
	quota := s.quota
	if quota == 0 {
		quota = render.QuotaBackendBytes(c)
	}
	return quota > 0 && float64(s.dbSize) >= nearQuotaShare*float64(quota)
}
