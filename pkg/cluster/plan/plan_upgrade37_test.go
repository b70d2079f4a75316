package plan_test

import (
	"testing"

	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

func TestDataRanOnToRecord(t *testing.T) {
	answer := func(v string, index, applied uint64, learner bool) etcdfacts.Status {
		return etcdfacts.Status{ID: 100, Version: v, RaftIndex: index, RaftAppliedIndex: applied, IsLearner: learner}
	}
	for _, tc := range []struct {
		name     string
		st       etcdfacts.Status
		recorded string
		want     string
	}{
		{"a voting member on 3.7 with its log applied, nothing recorded: 3.7", answer("3.7.3", 1000, 1000, false), "", "3.7"},
		{"a few entries still to apply is caught up", answer("3.7.3", 1030, 1000, false), "", "3.7"},
		{"recorded already: no write", answer("3.7.3", 1000, 1000, false), "3.7", ""},
		{"a newer release recorded is never lowered", answer("3.7.3", 1000, 1000, false), "3.8", ""},
		{"a newer minor than recorded: raised", answer("3.8.0", 1000, 1000, false), "3.7", "3.8"},
		{"an unreadable record is written over", answer("3.7.3", 1000, 1000, false), "x", "3.7"},
		{"3.6 is not recorded: its restart on older entries is safe", answer("3.6.16", 1000, 1000, false), "", ""},
		{"a learner is not recorded", answer("3.7.3", 1000, 1000, true), "", ""},
		{"a member still applying its log is not recorded: it has not read every entry yet", answer("3.7.3", 5000, 1000, false), "", ""},
		{"no version answered", answer("", 1000, 1000, false), "", ""},
	} {
		if got := DataRanOnToRecord(tc.st, tc.recorded); got != tc.want {
			t.Errorf("%s: DataRanOnToRecord = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDataRanOnToClear(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recorded string
		versions []string
		want     bool
	}{
		{"pods built with 3.5: cleared", "3.7", []string{"3.5.21", "3.6.16", "3.6.16"}, true},
		{"the pod on the claim built with 3.5: cleared", "3.7", []string{"3.6.16", "3.5.21", ""}, true},
		{"the member answers with 3.5: cleared", "3.7", []string{"3.6.16", "3.6.16", "3.5.21"}, true},
		{"3.6 everywhere: kept (a downgrade to 3.6 cancelled or undone restarts on its data)", "3.7", []string{"3.6.16", "3.6.16", "3.6.16"}, false},
		{"3.7: kept", "3.7", []string{"3.7.3", "3.7.3", "3.7.3"}, false},
		{"nothing known: kept", "3.7", []string{"", "", ""}, false},
		{"nothing recorded: no write", "", []string{"3.5.21", "3.5.21", "3.5.21"}, false},
	} {
		if got := DataRanOnToClear(tc.recorded, tc.versions...); got != tc.want {
			t.Errorf("%s: DataRanOnToClear = %v, want %v", tc.name, got, tc.want)
		}
	}
}
