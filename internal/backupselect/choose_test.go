package backupselect

import (
	"errors"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestChoose(t *testing.T) {
	three := []Entry{
		{Key: "k_v100_2026-12-01-10:00:00", Revision: 100, Time: at("2026-12-01T10:00:00Z")},
		{Key: "k_v300_2026-12-01-12:00:00", Revision: 300, Time: at("2026-12-01T12:00:00Z")},
		{Key: "k_v200_2026-12-01-11:00:00", Revision: 200, Time: at("2026-12-01T11:00:00Z")},
	}
	// Two backups in the same second (a backup-now right after a scheduled one), and
	// two of the same revision (nothing written between them).
	ties := []Entry{
		{Key: "k_v50_2026-12-01-10:00:00", Revision: 50, Time: at("2026-12-01T10:00:00Z")},
		{Key: "k_v51_2026-12-01-10:00:00", Revision: 51, Time: at("2026-12-01T10:00:00Z")},
		{Key: "k_v60_2026-12-01-11:00:00", Revision: 60, Time: at("2026-12-01T11:00:00Z")},
		{Key: "k_v60_2026-12-01-12:00:00", Revision: 60, Time: at("2026-12-01T12:00:00Z")},
	}
	tests := []struct {
		name    string
		entries []Entry
		sel     Selector
		want    string // key; "" = no match
	}{
		{"zero selector takes the newest", three, Selector{}, "k_v300_2026-12-01-12:00:00"},
		{"newest before a time between the 2nd and 3rd", three, Selector{NewestBefore: at("2026-12-01T11:30:00Z")}, "k_v200_2026-12-01-11:00:00"},
		{"a time exactly at a backup admits it", three, Selector{NewestBefore: at("2026-12-01T11:00:00Z")}, "k_v200_2026-12-01-11:00:00"},
		{"one second before a backup excludes it", three, Selector{NewestBefore: at("2026-12-01T10:59:59Z")}, "k_v100_2026-12-01-10:00:00"},
		{"a time in another zone is the same instant", three, Selector{NewestBefore: at("2026-12-01T13:30:00+02:00")}, "k_v200_2026-12-01-11:00:00"},
		{"a time west of UTC", three, Selector{NewestBefore: at("2026-12-01T06:00:00-05:00")}, "k_v200_2026-12-01-11:00:00"},
		{"after all of them takes the newest", three, Selector{NewestBefore: at("2027-01-01T00:00:00Z")}, "k_v300_2026-12-01-12:00:00"},
		{"before all of them matches nothing", three, Selector{NewestBefore: at("2026-12-01T09:59:59Z")}, ""},
		{"min revision takes the first that holds it", three, Selector{MinRevision: 150}, "k_v200_2026-12-01-11:00:00"},
		{"min revision equal to a backup's", three, Selector{MinRevision: 200}, "k_v200_2026-12-01-11:00:00"},
		{"min revision above all matches nothing", three, Selector{MinRevision: 301}, ""},
		{"both: newest before the time that holds the revision", three, Selector{NewestBefore: at("2026-12-01T12:30:00Z"), MinRevision: 150}, "k_v300_2026-12-01-12:00:00"},
		{"both, contradictory", three, Selector{NewestBefore: at("2026-12-01T10:30:00Z"), MinRevision: 150}, ""},
		{"no entries", nil, Selector{}, ""},
		{"same second: the higher revision", ties, Selector{NewestBefore: at("2026-12-01T10:00:00Z")}, "k_v51_2026-12-01-10:00:00"},
		{"same revision: the newer", ties, Selector{MinRevision: 55}, "k_v60_2026-12-01-12:00:00"},
		{"same revision before a time", ties, Selector{NewestBefore: at("2026-12-01T11:59:59Z"), MinRevision: 55}, "k_v60_2026-12-01-11:00:00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The order entries come in must not matter.
			rev := make([]Entry, len(tc.entries))
			for i, e := range tc.entries {
				rev[len(rev)-1-i] = e
			}
			for _, in := range [][]Entry{tc.entries, rev} {
				got, err := Choose(in, tc.sel)
				if tc.want == "" {
					if !errors.Is(err, ErrNoMatch) {
						t.Fatalf("got %+v, %v; want ErrNoMatch", got, err)
					}
					continue
				}
				if err != nil || got.Key != tc.want {
					t.Fatalf("got %q, %v; want %q", got.Key, err, tc.want)
				}
			}
		})
	}
}

func TestNoMatchSaysWhatThereIs(t *testing.T) {
	_, err := Choose([]Entry{
		{Key: "a", Revision: 7, Time: at("2026-12-01T10:00:00Z")},
		{Key: "b", Revision: 9, Time: at("2026-12-02T10:00:00Z")},
	}, Selector{NewestBefore: at("2026-11-30T10:00:00+01:00")})
	want := "no backup matches the selection: none of the 2 backups was taken at or before 2026-11-30T09:00:00Z " +
		"(they were taken from 2026-12-01T10:00:00Z to 2026-12-02T10:00:00Z, revisions 7 to 9)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
