package render

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// The etcd settings the API has typed (v1 spec.etcd, stored as v1beta2 annotations),
// read and checked here and passed to etcd as its environment variables. Environment,
// not flags: a user who already sets one through spec.pod.etcdEnv would otherwise make
// etcd exit ("conflicting environment variable is shadowed by corresponding
// command-line flag"); setting both is refused instead, naming both.

// EtcdSettings are the typed etcd settings of a cluster; zero values are unset (etcd's
// defaults apply).
type EtcdSettings struct {
	QuotaBackendBytes       int64
	AutoCompactionMode      string
	AutoCompactionRetention string
}

// Environment variables the settings become.
const (
	envQuotaBackendBytes       = "ETCD_QUOTA_BACKEND_BYTES"
	envAutoCompactionMode      = "ETCD_AUTO_COMPACTION_MODE"
	envAutoCompactionRetention = "ETCD_AUTO_COMPACTION_RETENTION"
)

var (
	// wholeNumberRE: etcd reads a retention without a unit as hours (periodic) or
	// revisions (revision).
	wholeNumberRE = regexp.MustCompile(`^[0-9]{1,18}$`)
	// durationRE is a Go duration without sign, as etcd parses a periodic retention.
	durationRE = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)
)

// Settings reads the cluster's typed etcd settings from its annotations and checks
// them, naming the annotation at fault. The v1 fields' CEL rules hold the same bounds.
func Settings(c *v1beta2.EtcdCluster) (EtcdSettings, error) {
	var s EtcdSettings
	a := c.Annotations
	if v, ok := a[v1beta2.QuotaBackendBytesAnnotation]; ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < v1beta2.MinQuotaBackendBytes || n > v1beta2.MaxQuotaBackendBytes {
			return s, fmt.Errorf("render: annotation %s=%q is not a number of bytes from %d (1 MiB) to %d (64 GiB)",
				v1beta2.QuotaBackendBytesAnnotation, v, v1beta2.MinQuotaBackendBytes, v1beta2.MaxQuotaBackendBytes)
		}
		s.QuotaBackendBytes = n
	}
	s.AutoCompactionMode = a[v1beta2.AutoCompactionModeAnnotation]
	switch s.AutoCompactionMode {
	case "", v1beta2.AutoCompactionPeriodic, v1beta2.AutoCompactionRevision:
	default:
		return s, fmt.Errorf("render: annotation %s=%q is neither %q nor %q",
			v1beta2.AutoCompactionModeAnnotation, s.AutoCompactionMode, v1beta2.AutoCompactionPeriodic, v1beta2.AutoCompactionRevision)
	}
	s.AutoCompactionRetention = a[v1beta2.AutoCompactionRetentionAnnotation]
	if err := checkRetention(s.AutoCompactionMode, s.AutoCompactionRetention); err != nil {
		return s, fmt.Errorf("render: annotation %s=%q: %w", v1beta2.AutoCompactionRetentionAnnotation, s.AutoCompactionRetention, err)
	}
	for _, e := range settingsEnv(s) {
		if userSets(c, e[0]) {
			return s, fmt.Errorf("render: spec.pod.etcdEnv sets %s, which the annotation %s sets too: keep one", e[0], e[2])
		}
	}
	return s, nil
}

// checkRetention checks a retention as etcd will read it under the mode.
func checkRetention(mode, v string) error {
	if v == "" || wholeNumberRE.MatchString(v) {
		return nil
	}
	if mode == v1beta2.AutoCompactionRevision {
		return fmt.Errorf("the revision mode keeps a whole number of revisions")
	}
	if _, err := time.ParseDuration(v); err != nil || !durationRE.MatchString(v) {
		return fmt.Errorf("the periodic mode keeps a duration such as 30m or 1h, or a whole number of hours")
	}
	return nil
}

// settingsEnv lists the variables of the set settings: name, value, annotation.
func settingsEnv(s EtcdSettings) [][3]string {
	var out [][3]string
	if s.QuotaBackendBytes != 0 {
		out = append(out, [3]string{envQuotaBackendBytes, strconv.FormatInt(s.QuotaBackendBytes, 10), v1beta2.QuotaBackendBytesAnnotation})
	}
	if s.AutoCompactionMode != "" {
		out = append(out, [3]string{envAutoCompactionMode, s.AutoCompactionMode, v1beta2.AutoCompactionModeAnnotation})
	}
	if s.AutoCompactionRetention != "" {
		out = append(out, [3]string{envAutoCompactionRetention, s.AutoCompactionRetention, v1beta2.AutoCompactionRetentionAnnotation})
	}
	return out
}

// settingsValues are the chart's etcdSettingsEnv: the settings as environment entries.
func settingsValues(s EtcdSettings) []interface{} {
	out := []interface{}{}
	for _, e := range settingsEnv(s) {
		out = append(out, map[string]interface{}{"name": e[0], "value": e[1]})
	}
	return out
}

func userSets(c *v1beta2.EtcdCluster, name string) bool {
	if c.Spec.Pod == nil {
		return false
	}
	for _, e := range c.Spec.Pod.EtcdEnv {
		if e.Name == name {
			return true
		}
	}
	return false
}

// QuotaBackendBytes is the quota new members are configured with: the typed setting,
// else a plain ETCD_QUOTA_BACKEND_BYTES of spec.pod.etcdEnv, else etcd's default. (A
// setting changed on a running cluster reaches only members created after the change.)
func QuotaBackendBytes(c *v1beta2.EtcdCluster) int64 {
	if s, err := Settings(c); err == nil && s.QuotaBackendBytes != 0 {
		return s.QuotaBackendBytes
	}
	if c.Spec.Pod != nil {
		for _, e := range c.Spec.Pod.EtcdEnv {
			if e.Name == envQuotaBackendBytes && e.ValueFrom == nil {
				if n, err := strconv.ParseInt(e.Value, 10, 64); err == nil && n > 0 {
					return n
				}
			}
		}
	}
	return v1beta2.DefaultQuotaBackendBytes
}
