package v1

import (
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apitestingfuzzer "k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/randfill"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// fuzzIterations per kind and direction; each object is large (pod policies carry whole
// corev1 affinities and PVC specs), so this covers many shapes in a few seconds.
const fuzzIterations = 2000

// newFiller fills objects randomly, with the apimachinery fillers for metadata and
// quantities plus ours for values whose conversion has edge cases worth hitting often:
// second counts around a Go duration's range, durations with and without a fraction of
// a second, and condition times that are and are not in metav1.Time's own format.
func newFiller(t *testing.T, seed int64) *randfill.Filler {
	scheme := runtime.NewScheme()
	if err := v1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := apitestingfuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), serializer.NewCodecFactory(scheme))
	f.NilChance(0.25).NumElements(0, 3)
	f.Funcs(
		func(p *v1beta2.PodPolicy, c randfill.Continue) {
			c.FillNoCustom(p)
			p.DNSTimeoutInSecond = randomSeconds(c)
		},
		func(p *v1beta2.BackupPolicy, c randfill.Continue) {
			c.FillNoCustom(p)
			p.TimeoutInSecond = randomSeconds(c)
			p.BackupIntervalInSecond = randomSeconds(c)
			p.MaxAgeInSecond = randomSeconds(c)
		},
		// The annotations a v1 field is stored as, present or not, empty or not, on both
		// versions: the conversion must keep them apart from the fields.
		func(b *v1beta2.EtcdBackup, c randfill.Continue) {
			c.FillNoCustom(b)
			randomFieldAnnotations(&b.ObjectMeta, c)
		},
		func(b *EtcdBackup, c randfill.Continue) {
			c.FillNoCustom(b)
			randomFieldAnnotations(&b.ObjectMeta, c)
		},
		func(r *v1beta2.EtcdRestore, c randfill.Continue) {
			c.FillNoCustom(r)
			randomRestoreAnnotations(&r.ObjectMeta, c)
		},
		func(r *EtcdRestore, c randfill.Continue) {
			c.FillNoCustom(r)
			randomRestoreAnnotations(&r.ObjectMeta, c)
		},
		func(s *BackupSelector, c randfill.Continue) {
			c.FillNoCustom(s)
			if c.Intn(3) == 0 {
				s.MinRevision = 0
			}
		},
		func(e *v1beta2.EtcdCluster, c randfill.Continue) {
			c.FillNoCustom(e)
			randomClusterAnnotations(&e.ObjectMeta, c)
		},
		func(e *EtcdCluster, c randfill.Continue) {
			c.FillNoCustom(e)
			randomClusterAnnotations(&e.ObjectMeta, c)
		},
		func(e *EtcdSettings, c randfill.Continue) {
			c.FillNoCustom(e)
			if c.Intn(3) == 0 { // a plausible quota, besides random int64s
				e.QuotaBackendBytes = c.Int63n(1 << 36)
			}
		},
		// An ipFamilyPolicy is never "" (the schema's enum); nil is unset.
		func(cs *ClientService, c randfill.Continue) {
			c.FillNoCustom(cs)
			if cs.IPFamilyPolicy != nil && *cs.IPFamilyPolicy == "" {
				cs.IPFamilyPolicy = nil
			}
		},
		// An issuer names exactly one (the schema's rules): tls.issuer {} is refused, and
		// so are certificateLifetime and renewBefore without issuerRef.
		func(i *TLSIssuer, c randfill.Continue) {
			c.FillNoCustom(i)
			if i.Builtin == nil && i.IssuerRef == nil {
				i.Builtin = &BuiltinIssuer{}
			}
			if i.IssuerRef != nil {
				i.Builtin = nil
			} else {
				i.CertificateLifetime, i.RenewBefore = nil, nil
			}
		},
		func(d *metav1.Duration, c randfill.Continue) {
			d.Duration = randomDuration(c)
		},
		func(cc *v1beta2.ClusterCondition, c randfill.Continue) {
			c.FillNoCustom(cc)
			cc.LastTransitionTime = randomConditionTime(c)
			cc.LastUpdateTime = randomConditionTime(c)
		},
		func(cc *metav1.Condition, c randfill.Continue) {
			c.FillNoCustom(cc)
			if c.Intn(4) == 0 {
				cc.LastTransitionTime = metav1.Time{}
			}
		},
	)
	return f
}

func randomSeconds(c randfill.Continue) int64 {
	switch c.Intn(6) {
	case 0:
		return 0
	case 1:
		return c.Int63n(100000)
	case 2:
		return -c.Int63n(100000)
	case 3: // around the largest whole seconds a Duration holds
		return maxWholeSeconds - 2 + c.Int63n(5)
	case 4:
		return -maxWholeSeconds + 2 - c.Int63n(5)
	default:
		return int64(c.Uint64())
	}
}

func randomDuration(c randfill.Continue) time.Duration {
	switch c.Intn(6) {
	case 0:
		return 0
	case 1:
		return time.Duration(c.Int63n(100000)) * time.Second
	case 2:
		return time.Duration(c.Int63n(100000)) * time.Millisecond
	case 3:
		return -time.Duration(c.Int63n(100000)) * time.Millisecond
	case 4:
		return []time.Duration{math.MaxInt64, math.MinInt64, time.Duration(maxWholeSeconds) * time.Second}[c.Intn(3)]
	default:
		return time.Duration(c.Uint64())
	}
}

func randomConditionTime(c randfill.Continue) string {
	t := time.Unix(c.Int63n(1000*365*24*3600), 0).UTC()
	switch c.Intn(7) {
	case 0:
		return ""
	case 1, 2:
		return t.Format(time.RFC3339)
	case 3:
		return t.In(time.FixedZone("", 7200)).Format(time.RFC3339)
	case 4:
		return t.Add(time.Duration(c.Int63n(1e9))).Format(time.RFC3339Nano)
	case 5:
		return "0001-01-01T00:00:00Z"
	default:
		return c.String(20)
	}
}

// viaJSON encodes and decodes obj as the API server and webhook do between conversions,
// so values that only survive in memory (not in JSON) cannot make a round trip pass.
func viaJSON[T any](t *testing.T, obj T) T {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return out
}

// roundTrip fills hub objects, converts them to v1 and back, and fills v1 objects,
// converts them to the hub and back; both must give the original object.
func roundTrip[H interface {
	conversion.Hub
	*HT
}, S interface {
	conversion.Convertible
	*ST
}, HT, ST any](t *testing.T, seed int64) {
	f := newFiller(t, seed)
	for i := 0; i < fuzzIterations; i++ {
		hub := H(new(HT))
		f.Fill(hub)
		hub = viaJSON(t, hub)
		spoke := S(new(ST))
		if err := spoke.ConvertFrom(hub); err != nil {
			t.Fatalf("v1beta2 to v1: %v", err)
		}
		spoke = viaJSON(t, spoke)
		back := H(new(HT))
		if err := spoke.ConvertTo(back); err != nil {
			t.Fatalf("v1 to v1beta2: %v", err)
		}
		back = viaJSON(t, back)
		if !equality.Semantic.DeepEqual(hub, back) {
			t.Fatalf("v1beta2 -> v1 -> v1beta2 changed the object (seed %d, iteration %d):\n%s", seed, i, cmp.Diff(hub, back))
		}

		spoke = S(new(ST))
		f.Fill(spoke)
		spoke = viaJSON(t, spoke)
		hub = H(new(HT))
		if err := spoke.ConvertTo(hub); err != nil {
			t.Fatalf("v1 to v1beta2: %v", err)
		}
		hub = viaJSON(t, hub)
		backSpoke := S(new(ST))
		if err := backSpoke.ConvertFrom(hub); err != nil {
			t.Fatalf("v1beta2 to v1: %v", err)
		}
		backSpoke = viaJSON(t, backSpoke)
		if !equality.Semantic.DeepEqual(spoke, backSpoke) {
			t.Fatalf("v1 -> v1beta2 -> v1 changed the object (seed %d, iteration %d):\n%s", seed, i, cmp.Diff(spoke, backSpoke))
		}
	}
}

func TestRoundTripFuzz(t *testing.T) {
	// A new seed each run widens coverage over time; a failure names its seed, and
	// FUZZ_SEED=<seed> replays it.
	seed := time.Now().UnixNano()
	if s := os.Getenv("FUZZ_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("FUZZ_SEED: %v", err)
		}
	}
	t.Logf("seed %d", seed)
	t.Run("EtcdCluster", func(t *testing.T) {
		roundTrip[*v1beta2.EtcdCluster, *EtcdCluster](t, seed)
	})
	t.Run("EtcdBackup", func(t *testing.T) {
		roundTrip[*v1beta2.EtcdBackup, *EtcdBackup](t, seed)
	})
	t.Run("EtcdRestore", func(t *testing.T) {
		roundTrip[*v1beta2.EtcdRestore, *EtcdRestore](t, seed)
	})
}

// randomFieldAnnotations sets each of the annotations that hold a v1 field of EtcdBackup
// on v1beta2 to nothing, "" or a value, at random.
func randomFieldAnnotations(meta *metav1.ObjectMeta, c randfill.Continue) {
	randomAnnotations(meta, c, []string{v1beta2.BackupScheduleAnnotation, v1beta2.BackupTimeZoneAnnotation, v1beta2.BackupCompressionAnnotation},
		func() string { return "v" + strconv.Itoa(c.Intn(3)) })
	randomAnnotations(meta, c, []string{v1beta2.BackupVerifyAfterEachAnnotation, v1beta2.BackupVerifyScheduleAnnotation, v1beta2.BackupVerifyTimeZoneAnnotation},
		func() string { return []string{"true", "false", "v1"}[c.Intn(3)] })
}

// randomClusterAnnotations does the same for EtcdCluster's spec.etcd, with values a
// number field may or may not hold: numbers, "0", a leading zero or sign, a quantity.
func randomClusterAnnotations(meta *metav1.ObjectMeta, c randfill.Continue) {
	values := []string{"1048576", "4294967296", "-5", "0", "007", "+3", "2Gi", "periodic", "revision", "1h", "v1",
		"150", "2147483648", "@daily", "0 3 * * 0", "Europe/Berlin"}
	randomAnnotations(meta, c, []string{v1beta2.QuotaBackendBytesAnnotation, v1beta2.AutoCompactionModeAnnotation, v1beta2.AutoCompactionRetentionAnnotation,
		v1beta2.DefragmentationScheduleAnnotation, v1beta2.DefragmentationTimeZoneAnnotation, v1beta2.DefragmentationThresholdAnnotation},
		func() string { return values[c.Intn(len(values))] })
	// The pod and client Service options: JSON in the field's own form, the same JSON
	// spaced differently or with an unknown field (which stays an annotation), and
	// plain strings.
	knobValues := []string{`[{"name":"regcred"}]`, `[ {"name": "regcred"} ]`, `[{"name":"a","extra":1}]`, `[]`, `{}`, `null`,
		`[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]`,
		`{"nameservers":["10.0.0.10"],"searches":["example.com"]}`, `{"a":"b"}`, `["10.0.0.0/8"]`, `["IPv4","IPv6"]`,
		"NodePort", "LoadBalancer", "Local", "SingleStack", "high-priority", "v1"}
	randomAnnotations(meta, c, append(append([]string{}, v1beta2.PodKnobAnnotations...), v1beta2.ClientServiceAnnotations...),
		func() string { return knobValues[c.Intn(len(knobValues))] })
	// spec.auth: "enabled", other text, Secret names.
	authValues := []string{v1beta2.AuthEnabledValue, "Enabled", "true", "root-pw", ""}
	randomAnnotations(meta, c, []string{v1beta2.AuthAnnotation, v1beta2.AuthRootSecretAnnotation},
		func() string { return authValues[c.Intn(len(authValues))] })
}

// randomRestoreAnnotations does the same for EtcdRestore's selection: names, times in
// UTC and with an offset, numbers the revision field may or may not hold.
func randomRestoreAnnotations(meta *metav1.ObjectMeta, c randfill.Continue) {
	values := []string{"nightly", "2026-12-03T10:00:00Z", "2026-12-03T12:00:00+02:00", "2026-12-03T10:00:00.5Z", "42", "0", "007", "-1", "soon"}
	randomAnnotations(meta, c, []string{v1beta2.RestoreBackupRefAnnotation, v1beta2.RestoreNewestBeforeAnnotation, v1beta2.RestoreMinRevisionAnnotation},
		func() string { return values[c.Intn(len(values))] })
}

// randomAnnotations sets each key to nothing, "" or value(), at random.
func randomAnnotations(meta *metav1.ObjectMeta, c randfill.Continue, keys []string, value func() string) {
	for _, key := range keys {
		switch c.Intn(3) {
		case 1:
			if meta.Annotations == nil {
				meta.Annotations = map[string]string{}
			}
			meta.Annotations[key] = ""
		case 2:
			if meta.Annotations == nil {
				meta.Annotations = map[string]string{}
			}
			meta.Annotations[key] = value()
		}
	}
}
