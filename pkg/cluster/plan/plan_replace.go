package plan

import api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"

// Rule 5 for members whose data is gone (planCrashLooping, in stuck.go, is rule 5 for a
// member whose pod crash-loops): each is removed to be added again under its name by rule 7.

// planDataGone is rule 5 for a voting member whose data is gone: it is removed (leadership
// moved away first) to be added again under the same name. One that still answers (its pod
// runs on, its claim deleted under it) still holds a copy of the data: it is removed only
// while no other member is missing, so that each is replaced, and the cluster grown back,
// before the next goes; two doomed healthy voters of three are never removed one after the
// other down to a single copy.
func planDataGone(s State) (Decision, bool) {
	for _, m := range SortedMembers(s.Members) {
		if m.Learner || !dataGone(s, m) {
			continue
		}
		// Not while etcd's downgrade is enabled: no member can join then, and the rollout
		// would restart the deferred member (its pod deleted, its copy gone) anyway.
		if m.Healthy && m.Ordinal < s.Size && missingMember(s) && s.DowngradeTarget == "" {
			continue
		}
		reason := api.ReasonReplacingMember
		if m.Ordinal >= s.Size {
			reason = api.ReasonScalingDown
		}
		return removeVoter(s, m, reason), true
	}
	return Decision{}, false
}

// missingMember: an ordinal below spec.size has no voting member (one removed to be
// replaced, or not added yet).
func missingMember(s State) bool {
	for o := range s.Size {
		if _, ok := memberAt(s, o); !ok {
			return true
		}
	}
	return false
}

// memberAt is the voting member of ordinal o, if any.
func memberAt(s State, o int) (MemberView, bool) {
	for _, m := range s.Members {
		if m.Ordinal == o && !m.Learner {
			return m, true
		}
	}
	return MemberView{}, false
}
