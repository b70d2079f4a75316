package plan_test

import (
	"strings"
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// downgrading is what member o answers during a downgrade: its version, its storage version
// and the downgrade etcd has enabled ("" for none).
func downgrading(o int, v, storage, target string) etcdfacts.Status {
	st := plantest.Reporting(o, v, 1000)
	st.StorageVersion, st.DowngradeTarget = storage, target
	return st
}

func TestPlanDowngrade(t *testing.T) {
	newer, older := "3.7.3", "3.6.16"
	all := []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}
	hour := time.Hour
	// The pods of a cluster on 3.7.3 whose spec says 3.6.16; state fills in what observe does.
	state := func(spec string, persistent bool, ms []MemberView, ps map[int]PodView, st map[int]etcdfacts.Status) State {
		s := rolloutState(TargetVersion(spec, LowestVersion(st), persistent, DowngradeTarget(st)), persistent, ms, ps, st)
		s.SpecVersion, s.Version, s.DowngradeTarget = spec, LowestVersion(st), DowngradeTarget(st)
		return s
	}
	notYet := map[int]etcdfacts.Status{0: downgrading(0, newer, "3.7.0", ""), 1: downgrading(1, newer, "3.7.0", ""), 2: downgrading(2, newer, "3.7.0", "")}
	enabled := map[int]etcdfacts.Status{0: downgrading(0, newer, "3.6.0", "3.6.0"), 1: downgrading(1, newer, "3.6.0", "3.6.0"), 2: downgrading(2, newer, "3.6.0", "3.6.0")}
	storageLeft := map[int]etcdfacts.Status{0: downgrading(0, newer, "3.6.0", "3.6.0"), 1: downgrading(1, newer, "3.7.0", "3.6.0"), 2: downgrading(2, newer, "3.6.0", "3.6.0")}
	oneDown := map[int]etcdfacts.Status{0: downgrading(0, newer, "3.6.0", "3.6.0"), 1: downgrading(1, newer, "3.6.0", "3.6.0"), 2: downgrading(2, older, "3.6.0", "3.6.0")}
	onNewer := plantest.Pods(plantest.Rolled(0, newer, false, hour), plantest.Rolled(1, newer, false, hour), plantest.Rolled(2, newer, false, hour))
	toOlder := plantest.Pods(plantest.Rolled(0, newer, true, hour), plantest.Rolled(1, newer, true, hour), plantest.Rolled(2, newer, true, hour))
	twoLeft := plantest.Pods(plantest.Rolled(0, newer, true, hour), plantest.Rolled(1, newer, true, hour), plantest.Rolled(2, older, false, hour))
	// Set back to 3.7.3 with member 2 on 3.6.16: its pod is the outdated one.
	backUp := plantest.Pods(plantest.Rolled(0, newer, false, hour), plantest.Rolled(1, newer, false, hour), plantest.Rolled(2, older, true, hour))
	withSick := []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))}

	scaledUp := state(older, true, all, toOlder, enabled)
	scaledUp.Size = 4

	// Member 1 lost (its data gone, removed) after member 2 went down to the older release.
	lostOne := state(older, true, []MemberView{plantest.Leader(0), plantest.Voter(2)},
		plantest.Pods(plantest.Rolled(0, newer, true, hour), plantest.Rolled(2, older, false, hour)),
		map[int]etcdfacts.Status{0: downgrading(0, newer, "3.6.0", "3.6.0"), 2: downgrading(2, older, "3.6.0", "3.6.0")})

	// The same once etcd's downgrade is cancelled: the members report no downgrade.
	cancelled := state(older, true, []MemberView{plantest.Leader(0), plantest.Voter(2)},
		plantest.Pods(plantest.Rolled(0, newer, true, hour), plantest.Rolled(2, older, false, hour)),
		map[int]etcdfacts.Status{0: downgrading(0, newer, "3.6.0", ""), 2: downgrading(2, older, "3.6.0", "")})

	// Five members, c-1 lost and removed mid-downgrade, c-4's claim being deleted under its
	// running pod: no member can join while the downgrade is enabled, so c-4 is not kept
	// waiting for c-1 (the rollout would restart it, its copy gone, all the same).
	fiveShort := state(older, true, []MemberView{plantest.Leader(0), plantest.Voter(2), plantest.Voter(3), plantest.Voter(4)},
		plantest.Pods(plantest.Rolled(0, newer, true, hour), plantest.Rolled(2, newer, true, hour), plantest.Rolled(3, newer, true, hour), plantest.Rolled(4, newer, true, hour)),
		map[int]etcdfacts.Status{0: downgrading(0, newer, "3.6.0", "3.6.0"), 2: downgrading(2, newer, "3.6.0", "3.6.0"),
			3: downgrading(3, newer, "3.6.0", "3.6.0"), 4: downgrading(4, newer, "3.6.0", "3.6.0")})
	fiveShort.Size = 5
	fiveShort.Claims = plantest.Claims(plantest.Claim(0), plantest.Claim(2), plantest.Claim(3), deleting(plantest.Claim(4)))

	runPlanCases(t, []planCase{
		{
			name:     "mid-downgrade, a member missing and another's claim deleted under it: the doomed one is removed, not kept",
			state:    fiveShort,
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 4, MemberID: 104},
			progress: api.ReasonDowngrading,
		},
		{
			name:     "the downgrade cancelled with a member missing: the member joins again",
			state:    cancelled,
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonScalingUp,
		},
		{
			name:     "a member lost mid-downgrade: two voters cannot roll one more and etcd lets none join: the downgrade is cancelled so it can",
			state:    lostOne,
			want:     &Action{Kind: ActionCancelDowngrade},
			progress: api.ReasonScalingUp,
			message:  []string{"member c-1 is missing", "goes on once the cluster is whole"},
		},
		{
			name:     "a scale-up waits for the downgrade: etcd lets no member join while it is enabled",
			state:    scaledUp,
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonDowngrading,
		},
		{
			name:     "a minor downgrade on claims starts with etcd's downgrade enabled; the pods keep the newer version until then",
			state:    state(older, true, all, onNewer, notYet),
			want:     &Action{Kind: ActionEnableDowngrade, Version: older},
			progress: api.ReasonDowngrading,
			message:  []string{"enabling etcd's downgrade from 3.7 to 3.6"},
		},
		{
			name:     "not enabled while a member is unhealthy",
			state:    state(older, true, withSick, onNewer, notYet),
			progress: api.ReasonDowngrading,
			message:  []string{"2 of 3 healthy"},
		},
		{
			name:     "enabled: no member is restarted before etcd has lowered every storage version",
			state:    state(older, true, all, toOlder, storageLeft),
			progress: api.ReasonDowngrading,
			message:  []string{"storage version of member c-1 from 3.7.0 to 3.6"},
		},
		{
			name:     "enabled and lowered: the highest ordinal is restarted on its data first",
			state:    state(older, true, all, toOlder, enabled),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonDowngrading,
			message:  []string{"restarting member c-2 on its data with etcd 3.6.16"},
		},
		{
			name: "the leader last, leadership moved to the member already on the older release",
			state: state(older, true, all, plantest.Pods(plantest.Rolled(0, newer, true, hour), plantest.Rolled(1, older, false, hour), plantest.Rolled(2, older, false, hour)),
				map[int]etcdfacts.Status{0: downgrading(0, newer, "3.6.0", "3.6.0"), 1: downgrading(1, older, "3.6.0", "3.6.0"), 2: downgrading(2, older, "3.6.0", "3.6.0")}),
			want:     &Action{Kind: ActionMoveLeader, Ordinal: 0, MemberID: 100, Transferee: 102},
			progress: api.ReasonDowngrading,
		},
		{
			name:     "spec.version set back before the end: the downgrade is cancelled before anything is rolled",
			state:    state(newer, true, all, backUp, oneDown),
			want:     &Action{Kind: ActionCancelDowngrade},
			progress: api.ReasonUpgrading,
			message:  []string{"cancelling etcd's downgrade to 3.6: spec.version is 3.7.3"},
		},
		{
			name:     "set back before any member was restarted: cancelled too",
			state:    state(newer, true, all, onNewer, enabled),
			want:     &Action{Kind: ActionCancelDowngrade},
			progress: api.ReasonRollingPods,
		},
		{
			name:     "cancelled: the member that went down is rolled back up (replaced: 3.7 may not replay its log)",
			state:    state(newer, true, all, backUp, map[int]etcdfacts.Status{0: plantest.Reporting(0, newer, 1000), 1: plantest.Reporting(1, newer, 1000), 2: plantest.Reporting(2, older, 1000)}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
		},
		{
			name: "cancelled: a member back on 3.6 whose claim says its data ran on 3.7 is restarted on its data, not replaced",
			state: func() State {
				s := state(newer, true, all, backUp, map[int]etcdfacts.Status{0: plantest.Reporting(0, newer, 1000), 1: plantest.Reporting(1, newer, 1000), 2: plantest.Reporting(2, older, 1000)})
				s.Claims = plantest.Claims(plantest.RanOn(plantest.Claim(0), "3.7"), plantest.RanOn(plantest.Claim(1), "3.7"), plantest.RanOn(plantest.Claim(2), "3.7"))
				return s
			}(),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonUpgrading,
			message:  []string{"restarting member c-2 on its data with etcd 3.7.3"},
		},
		{
			name: "... its claim marked with its member alone (not known to have run 3.7): replaced",
			state: func() State {
				s := state(newer, true, all, backUp, map[int]etcdfacts.Status{0: plantest.Reporting(0, newer, 1000), 1: plantest.Reporting(1, newer, 1000), 2: plantest.Reporting(2, older, 1000)})
				s.Claims = plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2))
				return s
			}(),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
		},
		{
			name:     "on emptyDir a minor downgrade is not started: the members keep the newer version",
			state:    state(older, false, all, onNewer, notYet),
			progress: "",
		},
		{
			name:     "a downgrade under way (one member done) goes on with the next member",
			state:    state(older, true, all, twoLeft, oneDown),
			want:     &Action{Kind: ActionRollMember, Ordinal: 1, MemberID: 101, Evict: true},
			progress: api.ReasonDowngrading,
		},
	})
}

func TestVersionProblem(t *testing.T) {
	for _, tc := range []struct {
		running, target string
		persistent      bool
		says            string
	}{
		{"3.6.16", "3.6.17", false, ""},
		{"3.6.16", "3.6.2", false, ""},
		{"3.6.16", "3.7.3", false, ""},
		{"3.5.35", "3.6.16", false, ""},
		{"3.5.32", "3.6.16", true, ""},
		{"3.5.31", "3.6.16", true, "3.5.32 or later"},
		{"3.5.35", "3.7.3", true, "skips a minor version"},
		{"3.7.3", "3.6.16", true, ""},
		{"3.6.16", "3.5.35", true, ""},
		{"3.7.3", "3.6.16", false, "emptyDir"},
		{"3.7.3", "3.5.35", true, "downgrades one minor at a time"},
		{"3.7.3", "4.0.0", true, "major version"},
		{"", "3.7.3", false, ""},
	} {
		got := VersionProblem(tc.running, tc.target, tc.persistent)
		if (tc.says == "") != (got == "") || !strings.Contains(got, tc.says) {
			t.Errorf("versionProblem(%s, %s, claims %v) = %q, want one that says %q", tc.running, tc.target, tc.persistent, got, tc.says)
		}
	}
}

// TestTargetVersion: the version member pods are built with, from spec.version, the oldest
// version a member runs and the downgrade etcd has enabled.
func TestTargetVersion(t *testing.T) {
	for _, tc := range []struct {
		spec, running string
		persistent    bool
		downgrade     string
		want          string
	}{
		{"3.6.16", "", true, "", "3.6.16"},
		{"v3.7.3", "3.6.16", true, "", "3.7.3"},
		{"3.7.3", "3.5.35", true, "", "3.5.35"},
		{"3.6.16", "3.7.3", true, "", "3.7.3"},
		{"3.6.16", "3.7.3", true, "3.6.0", "3.6.16"},
		{"3.6.16", "3.7.3", false, "", "3.7.3"},
		{"3.6.15", "3.6.16", false, "", "3.6.15"},
		{"3.6.16", "3.6.16", true, "3.6.0", "3.6.16"},
	} {
		if got := TargetVersion(tc.spec, tc.running, tc.persistent, tc.downgrade); got != tc.want {
			t.Errorf("targetVersion(%s, running %s, claims %v, downgrade %q) = %s, want %s", tc.spec, tc.running, tc.persistent, tc.downgrade, got, tc.want)
		}
	}
}
