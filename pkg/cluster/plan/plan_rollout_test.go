package plan_test

import (
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

func rolloutState(target string, persistent bool, ms []MemberView, ps map[int]PodView, st map[int]etcdfacts.Status) State {
	return State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: ms, Pods: ps, Statuses: st,
		Persistent: persistent, TargetVersion: target, Version: "3.5.35", Now: plantest.PassAt,
		Claims: map[int]ClaimView{}}
}

func TestPlanRollout(t *testing.T) {
	old, cur := "3.5.35", "3.6.16"
	all := []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}
	allOld := map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, old, 1000), 2: plantest.Reporting(2, old, 1000)}
	twoDone := map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, cur, 1000), 2: plantest.Reporting(2, cur, 1000)}
	hour := time.Hour
	stalePod := plantest.Rolled(1, cur, false, hour)
	stalePod.StaleMetadata = true
	pulling := plantest.Rolled(2, cur, false, 30*time.Second)
	pulling.Waiting = "ImagePullBackOff: Back-off pulling image"
	stuck := pulling
	stuck.Created = plantest.PassAt.Add(-DefaultComebackBound - time.Second)
	stuckBack := stuck
	stuckBack.Outdated = true

	one := []MemberView{plantest.Leader(0)}
	oneOld := map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000)}
	single := func(persistent bool) State {
		s := rolloutState(cur, persistent, one, plantest.Pods(plantest.Rolled(0, old, true, hour)), oneOld)
		s.Size = 1
		return s
	}

	// The same version change, for pods whose etcd image alone differs (3.6 -> 3.7 and
	// back, a patch release, another repository).
	imageOnly := func(o int, v string) PodView {
		p := plantest.Rolled(o, v, true, hour)
		p.ImageOnly = true
		return p
	}
	v36, v37 := "3.6.16", "3.7.3"
	at36 := map[int]etcdfacts.Status{0: plantest.Reporting(0, v36, 1000), 1: plantest.Reporting(1, v36, 1000), 2: plantest.Reporting(2, v36, 1000)}
	at37 := map[int]etcdfacts.Status{0: plantest.Reporting(0, v37, 1000), 1: plantest.Reporting(1, v37, 1000), 2: plantest.Reporting(2, v37, 1000)}
	// Member 2's image was changed a minute ago in a pod made an hour ago.
	restarted := func(pending bool, ago time.Duration) PodView {
		p := plantest.Rolled(2, v36, false, hour)
		p.RestartPending, p.RestartedAt = pending, plantest.PassAt.Add(-ago)
		return p
	}
	notReady := func(p PodView) PodView {
		p.NotReady = true
		return p
	}
	singleImage := func(persistent bool) State {
		s := rolloutState(v36, persistent, one, plantest.Pods(imageOnly(0, v37)), map[int]etcdfacts.Status{0: plantest.Reporting(0, v37, 1000)})
		s.Size = 1
		return s
	}

	// The single member on emptyDir, given a version whose image cannot be pulled, then set
	// back: nobody answers, and its pod is out of date in its image alone.
	badSingle := func(waiting string) State {
		p := imageOnly(0, "3.6.999")
		p.Waiting = waiting
		s := rolloutState(v36, false, nil, plantest.Pods(p), nil)
		s.Size, s.MembersKnown, s.LastMembers = 1, false, []LastMember{{Ordinal: 0, ID: 100}}
		return s
	}

	// Size 5: member 4 was rolled ten seconds ago and is not back; member 3, out of date, is
	// down for its own reasons.
	fiveOneBack := func() State {
		s := rolloutState(cur, true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2), plantest.Sick(plantest.Voter(3)), plantest.Sick(plantest.Voter(4))},
			plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), plantest.Rolled(2, old, true, hour), plantest.Rolled(3, old, true, hour),
				plantest.Rolled(4, cur, false, 10*time.Second)),
			map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, old, 1000), 2: plantest.Reporting(2, old, 1000)})
		s.Size = 5
		for o := range 5 {
			s.Claims[o] = ClaimView{Ordinal: o, Bound: true, MemberID: uint64(100 + o)}
		}
		return s
	}
	// The single member on a claim, given a pod spec etcd refuses, then set back: nobody
	// answers, its pod is out of date and crash-loops.
	crashSingle := func(persistent bool) State {
		p := plantest.Troubled(plantest.Rolled(0, cur, true, hour), ReasonCrashLoop, "container etcd restarted 4 times, last exit code 1: --election-timeout[200ms] should be at least", time.Minute)
		p.MemberID = 100
		s := rolloutState(cur, persistent, nil, plantest.Pods(p), nil)
		s.Size, s.MembersKnown, s.Bootstrapped, s.Now, s.LastMembers = 1, false, true, plantest.PassAt, []LastMember{{Ordinal: 0, ID: 100}}
		if persistent {
			s.Claims = map[int]ClaimView{0: {Ordinal: 0, Bound: true, MemberID: 100}}
		}
		return s
	}

	// Members on 3.6 going (back) up to 3.7 in their image alone, on claims; ranOn37 is the
	// claims of members whose data has run on 3.7 (a downgrade to 3.6 cancelled or undone).
	backTo37 := func(cs map[int]ClaimView) State {
		s := rolloutState(v37, true, all, plantest.Pods(imageOnly(0, v36), imageOnly(1, v36), imageOnly(2, v36)), at36)
		s.Claims = cs
		return s
	}
	ranOn37 := func(o int) ClaimView { return plantest.RanOn(plantest.Claim(o), "3.7") }
	// The single member on a claim, whose data ran on 3.7, back on 3.6 and set to 3.7 again,
	// on an image that cannot be pulled: nobody answers.
	badSingle37 := func(c ClaimView) State {
		p := imageOnly(0, v36)
		p.Waiting, p.MemberID = "ImagePullBackOff: Back-off pulling image", 100
		s := rolloutState(v37, true, nil, plantest.Pods(p), nil)
		s.Size, s.MembersKnown, s.LastMembers = 1, false, []LastMember{{Ordinal: 0, ID: 100}}
		s.Claims = plantest.Claims(c)
		return s
	}

	runPlanCases(t, []planCase{
		{
			name:     "3.6 up to 3.7 in the image alone, the claim says the member's data ran on 3.7 already: restarted in place, not replaced",
			state:    backTo37(plantest.Claims(ranOn37(0), ranOn37(1), ranOn37(2))),
			want:     &Action{Kind: ActionRestartInPlace, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
			message:  []string{"restarting member c-2 in place", "3.7.3"},
		},
		{
			name:     "... a claim marked with its member but not known to have run 3.7 (an old claim, a lost write): replaced",
			state:    backTo37(plantest.Claims(ranOn37(0), ranOn37(1), plantest.Claim(2))),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
			message:  []string{"replacing member c-2", "cannot replay"},
		},
		{
			name:     "... a claim whose 3.7 mark is another member's data says nothing of this member's: replaced",
			state:    backTo37(plantest.Claims(ranOn37(0), ranOn37(1), plantest.MarkedBy(ranOn37(2), 999))),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
		},
		{
			name:     "... a claim being deleted says nothing either: replaced",
			state:    backTo37(plantest.Claims(ranOn37(0), ranOn37(1), deleting(ranOn37(2)))),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
		},
		{
			name:     "no member answers, the single member whose data ran on 3.7 cannot pull 3.7 again: rolled in place on its data",
			state:    badSingle37(ranOn37(0)),
			want:     &Action{Kind: ActionRestartInPlace, Ordinal: 0, MemberID: 100},
			progress: api.ReasonUpgrading,
			message:  []string{"restarting member c-0 in place", "no member answers"},
		},
		{
			name:    "... not when its claim is not known to have run 3.7: that member is replaced, never restarted on its log",
			state:   badSingle37(plantest.Claim(0)),
			blocked: api.ReasonEtcdUnreachable,
		},
		{
			name:     "size 5: a member that is down and out of date waits while the member rolled before it is not back",
			state:    fiveOneBack(),
			progress: api.ReasonUpgrading,
			message:  []string{"waiting for member c-4"},
		},
		{
			name:     "no member answers, the single member on a claim crash-loops on a pod spec set back since: made again on its data",
			state:    crashSingle(true),
			want:     &Action{Kind: ActionRollMember, Ordinal: 0, MemberID: 100},
			progress: api.ReasonRollingPods,
			message:  []string{"restarting member c-0 on its data", "CrashLoopBackOff", "election-timeout"},
		},
		{
			name: "... or cannot be scheduled (a placement set back since): made again on its data too",
			state: func() State {
				s := crashSingle(true)
				p := plantest.Troubled(s.Pods[0], "Unschedulable", "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.", time.Minute)
				s.Pods[0] = p
				return s
			}(),
			want:     &Action{Kind: ActionRollMember, Ordinal: 0, MemberID: 100},
			progress: api.ReasonRollingPods,
			message:  []string{"Unschedulable"},
		},
		{
			name: "... not when its member-init found its data gone (reported as all data lost)",
			state: func() State {
				s := crashSingle(true)
				p := s.Pods[0]
				p.DataLost = true
				s.Pods[0] = p
				return s
			}(),
			blocked: api.ReasonNoQuorum,
			message: []string{"all data lost"},
		},
		{
			name:    "... on emptyDir its data would go with the pod: not made again",
			state:   crashSingle(false),
			blocked: api.ReasonEtcdUnreachable,
		},
		{
			name:     "no member answers, the single member's image cannot be pulled and was set back: rolled back in place",
			state:    badSingle("ImagePullBackOff: Back-off pulling image"),
			want:     &Action{Kind: ActionRestartInPlace, Ordinal: 0},
			progress: api.ReasonDowngrading,
			message:  []string{"restarting member c-0 in place", "no member answers", "ImagePullBackOff"},
		},
		{
			name:    "no member answers, its container runs: not rolled (it may be starting)",
			state:   badSingle(""),
			blocked: api.ReasonEtcdUnreachable,
		},
		{
			name:     "only the etcd image changes, on a claim: the container is restarted in place",
			state:    rolloutState(v36, true, all, plantest.Pods(imageOnly(0, v37), imageOnly(1, v37), imageOnly(2, v37)), at37),
			want:     &Action{Kind: ActionRestartInPlace, Ordinal: 2, MemberID: 102},
			progress: api.ReasonDowngrading,
			message:  []string{"restarting member c-2 in place", "3.6.16", "0 of 3 members done"},
		},
		{
			name:     "only the etcd image changes, on emptyDir: restarted in place, not replaced (the emptyDir stays with the pod)",
			state:    rolloutState(v36, false, all, plantest.Pods(imageOnly(0, v37), imageOnly(1, v37), imageOnly(2, v37)), at37),
			want:     &Action{Kind: ActionRestartInPlace, Ordinal: 2, MemberID: 102},
			progress: api.ReasonDowngrading,
			message:  []string{"in place"},
		},
		{
			name:     "a single member on emptyDir whose image alone changes is restarted in place: its data stays",
			state:    singleImage(false),
			want:     &Action{Kind: ActionRestartInPlace, Ordinal: 0, MemberID: 100},
			progress: api.ReasonDowngrading,
		},
		{
			name:     "up to 3.7 an image change alone still replaces an emptyDir member: 3.7 cannot replay what 3.5 may have logged",
			state:    rolloutState(v37, false, all, plantest.Pods(imageOnly(0, v36), imageOnly(1, v36), imageOnly(2, v36)), at36),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonUpgrading,
			message:  []string{"replacing member c-2"},
		},
		{
			name:     "up to 3.7 an image change alone still replaces a member on a claim",
			state:    rolloutState(v37, true, all, plantest.Pods(imageOnly(0, v36), imageOnly(1, v36), imageOnly(2, v36)), at36),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
		},
		{
			name: "gate: the image was changed but the kubelet still runs the old container",
			state: rolloutState(v36, true, all, plantest.Pods(imageOnly(0, v37), imageOnly(1, v37), restarted(true, time.Second)),
				map[int]etcdfacts.Status{0: plantest.Reporting(0, v37, 1000), 1: plantest.Reporting(1, v37, 1000), 2: plantest.Reporting(2, v36, 1000)}),
			progress: api.ReasonDowngrading,
			message:  []string{"waiting for member c-2", "not restarted its etcd container"},
		},
		{
			name: "gate: restarted in place, etcd answers on the new version but the pod is not Ready yet",
			state: rolloutState(v36, true, all, plantest.Pods(imageOnly(0, v37), imageOnly(1, v37), notReady(restarted(false, time.Second))),
				map[int]etcdfacts.Status{0: plantest.Reporting(0, v37, 1000), 1: plantest.Reporting(1, v37, 1000), 2: plantest.Reporting(2, v36, 1000)}),
			progress: api.ReasonDowngrading,
			message:  []string{"waiting for member c-2", "not Ready yet"},
		},
		{
			name: "gate: restarted in place a minute ago in a pod made an hour ago: within the bound",
			state: rolloutState(v36, true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				plantest.Pods(imageOnly(0, v37), imageOnly(1, v37), restarted(false, time.Minute)),
				map[int]etcdfacts.Status{0: plantest.Reporting(0, v37, 1000), 1: plantest.Reporting(1, v37, 1000)}),
			progress: api.ReasonDowngrading,
			message:  []string{"waiting for member c-2"},
		},
		{
			name: "the last member restarted in place is down: the rollout waits for it",
			state: rolloutState(v36, true, []MemberView{plantest.Voter(0), plantest.Leader(1), plantest.Sick(plantest.Voter(2))},
				plantest.Pods(plantest.Rolled(0, v36, false, hour), plantest.Rolled(1, v36, false, hour), restarted(false, time.Second)),
				map[int]etcdfacts.Status{0: plantest.Reporting(0, v36, 1000), 1: plantest.Reporting(1, v36, 1000)}),
			progress: api.ReasonRollingPods,
			message:  []string{"waiting for member c-2, restarted in place", "2 of 3 members done"},
		},
		{
			name: "a member restarted in place long ago and down now is not the rollout's",
			state: rolloutState(v36, true, []MemberView{plantest.Voter(0), plantest.Leader(1), plantest.Sick(plantest.Voter(2))},
				plantest.Pods(plantest.Rolled(0, v36, false, hour), plantest.Rolled(1, v36, false, hour), restarted(false, hour)),
				map[int]etcdfacts.Status{0: plantest.Reporting(0, v36, 1000), 1: plantest.Reporting(1, v36, 1000)}),
		},
		{
			name: "restarted in place longer ago than the bound and not back: the rollout stops",
			state: rolloutState(v36, true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				plantest.Pods(imageOnly(0, v37), imageOnly(1, v37), restarted(false, DefaultComebackBound+time.Second)),
				map[int]etcdfacts.Status{0: plantest.Reporting(0, v37, 1000), 1: plantest.Reporting(1, v37, 1000)}),
			blocked: api.ReasonRolloutStuck,
			message: []string{"member c-2 did not come back on 3.6.16"},
		},
		{
			name:     "a single member on a claim is restarted on its data: there is no majority to keep",
			state:    single(true),
			want:     &Action{Kind: ActionRollMember, Ordinal: 0, MemberID: 100},
			progress: api.ReasonUpgrading,
			message:  []string{"restarting member c-0 on its data"},
		},
		{
			name:    "a single member on emptyDir is never rolled: its data would go with its pod",
			state:   single(false),
			blocked: api.ReasonQuorumAtRisk,
			message: []string{"only member", "emptyDir", "lose every key"},
		},
		{
			name:  "every pod current: nothing to do",
			state: rolloutState(cur, true, all, plantest.Pods(plantest.Rolled(0, cur, false, hour), plantest.Rolled(1, cur, false, hour), plantest.Rolled(2, cur, false, hour)), twoDone),
		},
		{
			name:     "labels or annotations of spec.pod changed: patched in place, not rolled",
			state:    rolloutState(cur, true, all, plantest.Pods(plantest.Rolled(0, cur, false, hour), stalePod, plantest.Rolled(2, cur, false, hour)), twoDone),
			want:     &Action{Kind: ActionPatchPod, Ordinal: 1},
			progress: api.ReasonRollingPods,
		},
		{
			name:     "upgrade starts with the highest ordinal",
			state:    rolloutState(cur, true, all, plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), plantest.Rolled(2, old, true, hour)), allOld),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonUpgrading,
			message:  []string{"restarting member c-2 on its data", "3.6.16", "0 of 3 members done"},
		},
		{
			name: "up to 3.7 on claims a non-leader is removed, to be added back from a snapshot: 3.7 cannot replay what 3.5 may have logged",
			state: rolloutState("3.7.3", true, all, plantest.Pods(plantest.Rolled(0, "3.6.16", true, hour), plantest.Rolled(1, "3.6.16", true, hour), plantest.Rolled(2, "3.6.16", true, hour)),
				map[int]etcdfacts.Status{0: plantest.Reporting(0, "3.6.16", 1000), 1: plantest.Reporting(1, "3.6.16", 1000), 2: plantest.Reporting(2, "3.6.16", 1000)}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
			message:  []string{"replacing member c-2", "cannot replay"},
		},
		{
			name:     "on emptyDir the member is replaced",
			state:    rolloutState(cur, false, all, plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), plantest.Rolled(2, old, true, hour)), allOld),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonUpgrading,
			message:  []string{"replacing member c-2"},
		},
		{
			name: "the leader is passed over while others are out of date",
			state: rolloutState(cur, true, []MemberView{plantest.Voter(0), plantest.Voter(1), plantest.Leader(2)},
				plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), plantest.Rolled(2, old, true, hour)), allOld),
			want:     &Action{Kind: ActionRollMember, Ordinal: 1, MemberID: 101, Evict: true},
			progress: api.ReasonUpgrading,
		},
		{
			name: "the leader goes last: leadership moves first, to a member already rolled",
			state: rolloutState(cur, true, all, plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, cur, false, hour), plantest.Rolled(2, cur, false, hour)),
				twoDone),
			want:     &Action{Kind: ActionMoveLeader, Ordinal: 0, MemberID: 100, Transferee: 102},
			progress: api.ReasonUpgrading,
			message:  []string{"2 of 3 members done"},
		},
		{
			name: "leadership moved: the former leader is rolled",
			state: rolloutState(cur, true, []MemberView{plantest.Voter(0), plantest.Voter(1), plantest.Leader(2)},
				plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, cur, false, hour), plantest.Rolled(2, cur, false, hour)), twoDone),
			want:     &Action{Kind: ActionRollMember, Ordinal: 0, MemberID: 100, Evict: true},
			progress: api.ReasonUpgrading,
		},
		{
			name: "gate: the rolled member still reports the old version",
			state: rolloutState(cur, true, all, plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), plantest.Rolled(2, cur, false, time.Second)),
				allOld),
			progress: api.ReasonUpgrading,
			message:  []string{"waiting for member c-2", "reports etcd 3.5.35"},
		},
		{
			name: "gate: the rolled member has not caught up with the leader",
			state: rolloutState(cur, true, all, plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), plantest.Rolled(2, cur, false, time.Second)),
				map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, old, 1000), 2: plantest.Reporting(2, cur, 10)}),
			progress: api.ReasonUpgrading,
			message:  []string{"waiting for member c-2", "applied raft index 10"},
		},
		{
			name:     "gate: no leader, no next step",
			state:    rolloutState(cur, true, []MemberView{plantest.Voter(0), plantest.Voter(1), plantest.Voter(2)}, plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), plantest.Rolled(2, old, true, hour)), allOld),
			progress: api.ReasonUpgrading,
			message:  []string{"leader"},
		},
		{
			name: "gate: the rolled member is down, within the bound: wait, touch nobody",
			state: rolloutState(cur, true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), pulling), map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, old, 1000)}),
			progress: api.ReasonUpgrading,
			message:  []string{"waiting for member c-2", "ImagePullBackOff"},
		},
		{
			name: "the rolled member did not come back within the bound: the rollout stops and says why",
			state: rolloutState(cur, true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), stuck), map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, old, 1000)}),
			blocked: api.ReasonRolloutStuck,
			message: []string{"member c-2 did not come back on 3.6.16", "ImagePullBackOff", "no other member is touched"},
		},
		{
			name: "version set back: the stuck member is rolled back first",
			state: rolloutState(old, true, []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))},
				plantest.Pods(plantest.Rolled(0, old, false, hour), plantest.Rolled(1, old, false, hour), stuckBack), map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, old, 1000)}),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonDowngrading,
		},
		{
			name: "a pod template change at the same version rolls pods",
			state: rolloutState(old, true, all, plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), plantest.Rolled(2, old, false, hour)),
				allOld),
			want:     &Action{Kind: ActionRollMember, Ordinal: 1, MemberID: 101, Evict: true},
			progress: api.ReasonRollingPods,
			message:  []string{"1 of 3 members done"},
		},
		{
			name: "emptyDir: the rolled member's pod is gone, its removal is reported as the rollout",
			state: rolloutState(cur, false, all, plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour)),
				map[int]etcdfacts.Status{0: plantest.Reporting(0, old, 1000), 1: plantest.Reporting(1, old, 1000)}),
			want:     &Action{Kind: ActionRemoveMember, Ordinal: 2, MemberID: 102},
			progress: api.ReasonUpgrading,
			message:  []string{"rollout: 0 of 3 members done"},
		},
		{
			name: "a learner being re-added is finished before the rollout goes on",
			state: rolloutState(cur, false, []MemberView{plantest.Leader(0), plantest.Voter(1), learner(2, true)},
				plantest.Pods(plantest.Rolled(0, old, true, hour), plantest.Rolled(1, old, true, hour), plantest.Rolled(2, cur, false, time.Second)), allOld),
			want:     &Action{Kind: ActionPromote, Ordinal: 2, MemberID: 102},
			progress: api.ReasonScalingUp,
		},
	})
}
