package v1

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// ConversionDataAnnotation holds, as JSON, the values of an object that the version it
// was converted to cannot express, so that converting it back gives the original object.
// It is set on the converted object only when there is something to keep, and removed
// when that object is converted back. The payload depends on the direction:
//
// On a v1 object converted from v1beta2 (values only v1beta2 has):
//   - EtcdCluster spec.pod.busyboxImage (v1 dropped the ignored field);
//   - EtcdCluster spec.pod.DNSTimeoutInSecond and EtcdBackup spec.backupPolicy's
//     timeoutInSecond and backupIntervalInSecond when the number of seconds is too large
//     for a Go duration (about 292 years); v1 then shows the largest duration instead;
//   - EtcdCluster status.conditions[].lastUpdateTime (metav1.Condition has none), and
//     lastTransitionTime when it is not an RFC 3339 time metav1.Time would write the same
//     way (e.g. not UTC, fractional seconds, or not a time at all).
//
// On a v1beta2 object converted from v1 (values only v1 has):
//   - the durations dnsTimeout, timeout and backupInterval when a whole number of seconds
//     cannot hold them (a fraction of a second, or explicitly 0s rather than unset);
//   - EtcdCluster status.conditions[].observedGeneration (ClusterCondition has none);
//   - EtcdBackup annotations that v1beta2 uses for v1 fields (compression, schedule, time
//     zone) when the v1 object carried them itself, and whether a v1beta2 object had no
//     backupPolicy before v1 made one to hold a schedule.
//
// A kept value is restored only while the field it was converted into still holds what
// the conversion wrote, so an edit made through the other version wins over it. Condition
// values are matched by position and type. EtcdRestore uses it only for its v1
// spec.backupRef and spec.select (v1beta2 annotations): the v1 object's own annotations
// of those keys, and an empty backupRef or select, which no annotation records.
//
// One limit comes from the API server, not the conversion: an update of the status
// subresource keeps the stored metadata, so a v1-only status value (a condition's
// observedGeneration) written through v1's status subresource is not kept. The operator
// writes status through v1beta2, which has nothing to lose; v1beta2-only status values
// (lastUpdateTime) do survive a v1 status update, since they travel in the request.
const ConversionDataAnnotation = "etcd.database.coreos.com/v1-conversion-data"

// popConversionData removes ConversionDataAnnotation from meta and decodes it into data.
// An absent annotation leaves data untouched. A malformed one is an error: the key is
// reserved, and silently dropping it could lose a field.
func popConversionData(meta *metav1.ObjectMeta, data any) error {
	raw, ok := meta.Annotations[ConversionDataAnnotation]
	if !ok {
		return nil
	}
	delete(meta.Annotations, ConversionDataAnnotation)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
	if err := json.Unmarshal([]byte(raw), data); err != nil {
		return fmt.Errorf("annotation %s of %s/%s is malformed: %w", ConversionDataAnnotation, meta.Namespace, meta.Name, err)
	}
	return nil
}

// putConversionData stores data in ConversionDataAnnotation unless it holds nothing (every
// field of the data types is omitempty, so nothing encodes as {}).
func putConversionData(meta *metav1.ObjectMeta, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if string(raw) == "{}" {
		return nil
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[ConversionDataAnnotation] = string(raw)
	return nil
}

// maxWholeSeconds is the largest number of seconds a time.Duration holds.
const maxWholeSeconds = math.MaxInt64 / int64(time.Second)

// durationFromSeconds is the v1 form of a v1beta2 number of seconds: unset for 0, else the
// duration; exact is false when it is out of a Duration's range and was saturated.
func durationFromSeconds(s int64) (d *metav1.Duration, exact bool) {
	switch {
	case s == 0:
		return nil, true
	case s > maxWholeSeconds:
		return &metav1.Duration{Duration: math.MaxInt64}, false
	case s < -maxWholeSeconds:
		return &metav1.Duration{Duration: math.MinInt64}, false
	}
	return &metav1.Duration{Duration: time.Duration(s) * time.Second}, true
}

// secondsFromDuration is the v1beta2 form of a v1 duration: whole seconds, truncated
// toward zero; unset is 0.
func secondsFromDuration(d *metav1.Duration) int64 {
	if d == nil {
		return 0
	}
	return int64(d.Duration / time.Second)
}

func sameDuration(a, b *metav1.Duration) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Duration == b.Duration
}

// toV1Duration converts v1beta2 seconds to a v1 duration. kept is the exact v1 value an
// earlier v1→v1beta2 conversion saved (or nil); it is used while it still truncates to s.
// lost is s itself when the v1 value cannot hold it.
func toV1Duration(s int64, kept *metav1.Duration) (d *metav1.Duration, lost *int64) {
	if kept != nil && secondsFromDuration(kept) == s {
		return &metav1.Duration{Duration: kept.Duration}, nil
	}
	d, exact := durationFromSeconds(s)
	if !exact {
		return d, &s
	}
	return d, nil
}

// fromV1Duration converts a v1 duration to v1beta2 seconds. kept is the v1beta2 value an
// earlier v1beta2→v1 conversion saved (or nil); it is used while d is still what it
// converted to. lost is d itself when the seconds cannot reproduce it.
func fromV1Duration(d *metav1.Duration, kept *int64) (s int64, lost *metav1.Duration) {
	s = secondsFromDuration(d)
	if kept != nil {
		if back, _ := durationFromSeconds(*kept); sameDuration(back, d) {
			s = *kept
		}
	}
	if back, _ := durationFromSeconds(s); !sameDuration(back, d) {
		lost = &metav1.Duration{Duration: d.Duration}
	}
	return s, lost
}

// parseConditionTime reads a v1beta2 condition time (RFC 3339 text) as a metav1.Time,
// which keeps whole seconds only; empty or unparsable text is the zero time.
func parseConditionTime(raw string) metav1.Time {
	if raw == "" {
		return metav1.Time{}
	}
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return metav1.Time{}
	}
	return metav1.NewTime(t.UTC().Truncate(time.Second))
}

// formatConditionTime writes a metav1.Time as a v1beta2 condition time, the way
// metav1.Time itself is written in JSON; the zero time is empty.
func formatConditionTime(t metav1.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// v1beta2ConditionData keeps what a v1 condition cannot hold of the v1beta2 condition at
// Index (of type Type).
type v1beta2ConditionData struct {
	Index              int    `json:"index"`
	Type               string `json:"type"`
	LastUpdateTime     string `json:"lastUpdateTime,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	// RawTransitionTime says LastTransitionTime is kept (it may be kept empty: the zero
	// time is also what unparsable text reads as).
	RawTransitionTime bool `json:"rawTransitionTime,omitempty"`
}

// v1ConditionData keeps what a v1beta2 condition cannot hold of the v1 condition at Index.
type v1ConditionData struct {
	Index              int    `json:"index"`
	Type               string `json:"type"`
	ObservedGeneration int64  `json:"observedGeneration"`
}

// conditionsToV1 converts v1beta2 cluster conditions, restoring kept observedGenerations
// and returning what the v1 conditions cannot hold.
func conditionsToV1(in []v1beta2.ClusterCondition, kept []v1ConditionData) ([]metav1.Condition, []v1beta2ConditionData) {
	if in == nil {
		return nil, nil
	}
	out := make([]metav1.Condition, len(in))
	var lost []v1beta2ConditionData
	for i, c := range in {
		out[i] = metav1.Condition{
			Type:               string(c.Type),
			Status:             metav1.ConditionStatus(c.Status),
			LastTransitionTime: parseConditionTime(c.LastTransitionTime),
			Reason:             c.Reason,
			Message:            c.Message,
		}
		for _, k := range kept {
			if k.Index == i && k.Type == out[i].Type {
				out[i].ObservedGeneration = k.ObservedGeneration
			}
		}
		l := v1beta2ConditionData{Index: i, Type: out[i].Type, LastUpdateTime: c.LastUpdateTime}
		if formatConditionTime(out[i].LastTransitionTime) != c.LastTransitionTime {
			l.LastTransitionTime, l.RawTransitionTime = c.LastTransitionTime, true
		}
		if l.LastUpdateTime != "" || l.RawTransitionTime {
			lost = append(lost, l)
		}
	}
	return out, lost
}

// conditionsFromV1 converts v1 conditions to v1beta2 cluster conditions, restoring kept
// v1beta2 times and returning the observedGenerations v1beta2 cannot hold.
func conditionsFromV1(in []metav1.Condition, kept []v1beta2ConditionData) ([]v1beta2.ClusterCondition, []v1ConditionData) {
	if in == nil {
		return nil, nil
	}
	out := make([]v1beta2.ClusterCondition, len(in))
	var lost []v1ConditionData
	for i, c := range in {
		out[i] = v1beta2.ClusterCondition{
			Type:               v1beta2.ClusterConditionType(c.Type),
			Status:             corev1.ConditionStatus(c.Status),
			LastTransitionTime: formatConditionTime(c.LastTransitionTime),
			Reason:             c.Reason,
			Message:            c.Message,
		}
		for _, k := range kept {
			if k.Index != i || k.Type != c.Type {
				continue
			}
			out[i].LastUpdateTime = k.LastUpdateTime
			if k.RawTransitionTime && parseConditionTime(k.LastTransitionTime).Time.Equal(c.LastTransitionTime.Time) {
				out[i].LastTransitionTime = k.LastTransitionTime
			}
		}
		if c.ObservedGeneration != 0 {
			lost = append(lost, v1ConditionData{Index: i, Type: c.Type, ObservedGeneration: c.ObservedGeneration})
		}
	}
	return out, lost
}
