package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// A minor downgrade goes through etcd's downgrade API (etcd 3.6 and later), around the
// rollout of rule 8:
//
//  1. Every member runs the newer minor and spec.version is one minor below: etcd is asked to
//     enable the downgrade (validate, then enable), which lowers the cluster version. Until it
//     has, member pods keep being built with the version the cluster runs (targetVersion).
//  2. Before any member is rolled, every member reports its storage version lowered to the
//     target: etcd's own precondition for restarting a member on the older release.
//  3. The members are restarted on their data, one at a time, the leader last (rule 8); etcd
//     ends the downgrade itself once every member runs the target.
//  4. spec.version set back to the newer minor before the end: the downgrade is cancelled
//     first, then rule 8 rolls the members that went down back up.
//
// A minor downgrade on emptyDir is refused (versionProblem): its members would have to join
// again, on new data, and etcd lets no new member join while a downgrade is in progress
// (seen going down from api.DefaultVersion to the minor before it: "cluster version of remote
// member is not compatible; too low").
// Every step reads what etcd reports, so an operator killed between two of them starts again
// where etcd is.

// The actions of etcd's downgrade API.
const (
	// ActionEnableDowngrade asks etcd to validate and enable a downgrade to Action.Version.
	ActionEnableDowngrade ActionKind = "EnableDowngrade"
	// ActionCancelDowngrade cancels the downgrade in progress.
	ActionCancelDowngrade ActionKind = "CancelDowngrade"
)

// planDowngrade is the downgrade part of rule 8: enable or cancel etcd's downgrade, or wait
// for its storage version; false when the rollout may go on.
func planDowngrade(s State) (Decision, bool) {
	want, err := version.ParseGeneric(s.SpecVersion)
	if err != nil {
		return Decision{}, false
	}
	if s.DowngradeTarget != "" {
		target, err := version.ParseGeneric(s.DowngradeTarget)
		if err != nil {
			return Decision{}, false
		}
		if !sameMinor(want, target) {
			return Decision{Action: &Action{Kind: ActionCancelDowngrade}, Progress: rolloutReason(s), Message: fmt.Sprintf(
				"cancelling etcd's downgrade to %d.%d: spec.version is %s now", target.Major(), target.Minor(), s.SpecVersion)}, true
		}
		for _, o := range SortedOrdinals(s.Statuses) {
			st := s.Statuses[o]
			sv, err := version.ParseGeneric(st.StorageVersion)
			if err == nil && !sameMinor(sv, target) {
				return waiting(s, api.ReasonDowngrading, fmt.Sprintf(
					"waiting for etcd to lower the storage version of member %%s from %s to %d.%d before a member is restarted on %s",
					st.StorageVersion, target.Major(), target.Minor(), s.SpecVersion), o), true
			}
		}
		return Decision{}, false
	}
	running, err := version.ParseGeneric(s.Version)
	if err != nil || !oneMinorDown(running, want) || !s.Persistent {
		return Decision{}, false
	}
	voting, healthy := VotingCounts(s.Members)
	if healthy < voting || len(s.Members) != voting {
		return Decision{Progress: api.ReasonDowngrading, Message: fmt.Sprintf(
			"waiting for every member to be a healthy voting member before enabling etcd's downgrade to %d.%d (%d of %d healthy)",
			want.Major(), want.Minor(), healthy, voting)}, true
	}
	return Decision{Action: &Action{Kind: ActionEnableDowngrade, Version: s.SpecVersion}, Progress: api.ReasonDowngrading,
		Message: fmt.Sprintf("enabling etcd's downgrade from %d.%d to %d.%d before the members are restarted on %s",
			running.Major(), running.Minor(), want.Major(), want.Minor(), s.SpecVersion)}, true
}

// planDowngradeShort cancels etcd's downgrade when a member is missing (its data lost and
// removed) and the voters left cannot restart one more without losing quorum: etcd lets no
// member join while a downgrade is enabled, so the rollout could neither finish nor regrow.
// Once cancelled, etcd keeps the cluster version at the lowest version a member runs: rule 7
// adds the member back on the version the cluster runs (TargetVersion), and rule 8 goes on
// once the cluster is whole. If no member had gone down yet, the cluster version is back up
// and the downgrade is enabled again from its first step; if one had, the cluster version
// stays at the target (and the storage version with it), so the members left are restarted
// on it without etcd's downgrade API, as any member at or above the cluster version may be.
// A missing member the rollout can do without waits for the downgrade to finish.
func planDowngradeShort(s State) (Decision, bool) {
	if s.DowngradeTarget == "" || !missingMember(s) {
		return Decision{}, false
	}
	voting, healthy := VotingCounts(s.Members)
	if healthy-1 >= Quorum(voting) {
		return Decision{}, false
	}
	missing := -1
	for o := range s.Size {
		if _, ok := memberAt(s, o); !ok {
			missing = o
			break
		}
	}
	return Decision{Action: &Action{Kind: ActionCancelDowngrade}, Progress: reasonFor(s, missing), Message: fmt.Sprintf(
		"cancelling etcd's downgrade to %s: member %s is missing, etcd lets no member join during a downgrade, and %d voting members cannot restart one more; the rollout to spec.version goes on once the cluster is whole",
		s.DowngradeTarget, naming.Name(s.Name, missing), voting)}, true
}

func sameMinor(a, b *version.Version) bool {
	return a.Major() == b.Major() && a.Minor() == b.Minor()
}

// oneMinorDown: to is exactly one minor below from.
func oneMinorDown(from, to *version.Version) bool {
	return from.Major() == to.Major() && to.Minor()+1 == from.Minor()
}

// VersionProblem says why the members cannot be rolled from running (the oldest version a
// member runs) to target; empty when they can: a patch change either way, one minor up, or
// one minor down on claims (through etcd's downgrade API), including an upgrade set back
// before it finished (a member still runs the older minor).
func VersionProblem(running, target string, persistent bool) string {
	r, err := version.ParseGeneric(running)
	if err != nil {
		return ""
	}
	t, err := version.ParseGeneric(target)
	if err != nil {
		return fmt.Sprintf("spec.version %s is not an etcd release", target)
	}
	switch {
	case t.Major() != r.Major():
		return fmt.Sprintf("spec.version %s changes the major version of a cluster that runs %s, which etcd does not support: create a new cluster and copy the data", target, running)
	case t.Minor() > r.Minor()+1:
		return fmt.Sprintf("spec.version %s skips a minor version: the cluster runs %s and etcd upgrades one minor at a time; set spec.version to the newest %d.%d release first, then to %s",
			target, running, r.Major(), r.Minor()+1, target)
	case t.Minor() == r.Minor()+1 && r.LessThan(version.MustParseGeneric(minVersionFor36)) && t.Minor() == 6 && r.Minor() == 5:
		return fmt.Sprintf("spec.version %s: etcd's upgrade guide requires every 3.5 member on %s or later before 3.6; the cluster runs %s: set spec.version to the newest 3.5 release first",
			target, minVersionFor36, running)
	case t.Minor()+1 < r.Minor():
		return fmt.Sprintf("spec.version %s skips a minor version: the cluster runs %s and etcd downgrades one minor at a time; set spec.version to a %d.%d release first, then to %s",
			target, running, r.Major(), r.Minor()-1, target)
	case t.Minor()+1 == r.Minor() && !persistent:
		return fmt.Sprintf("spec.version %s is a minor downgrade of a cluster on emptyDir that runs %s: a downgrade restarts each member on its data, and etcd lets no member join again on new data while a downgrade is in progress. Set spec.version back to a %d.%d release, or create a cluster on claims",
			target, running, r.Major(), r.Minor())
	}
	return ""
}

// TargetVersion is the version member pods are built with: spec.version; or the version the
// cluster runs (running: the oldest a member reported) while spec.version is a step
// VersionProblem refuses, or a minor downgrade etcd has not enabled yet (downgrade: the
// version etcd's downgrade is enabled for, if any).
func TargetVersion(spec, running string, persistent bool, downgrade string) string {
	want := naming.NormalizeVersion(spec)
	if running == "" {
		return want
	}
	if VersionProblem(running, want, persistent) != "" {
		return running
	}
	r, rerr := version.ParseGeneric(running)
	w, werr := version.ParseGeneric(want)
	if rerr != nil || werr != nil || !oneMinorDown(r, w) {
		return want
	}
	if d, err := version.ParseGeneric(downgrade); err == nil && sameMinor(d, w) {
		return want
	}
	return running
}

// DowngradeTarget is the version etcd's downgrade is enabled for, as any member reports it:
// a member on 3.5 reports none, and the leader may be one during a downgrade to 3.5.
func DowngradeTarget(statuses map[int]etcdfacts.Status) string {
	for _, o := range SortedOrdinals(statuses) {
		if t := statuses[o].DowngradeTarget; t != "" {
			return t
		}
	}
	return ""
}

// LowestVersion is the oldest etcd version any member reports: the one the cluster speaks.
func LowestVersion(statuses map[int]etcdfacts.Status) string {
	var low *version.Version
	for _, st := range statuses {
		v, err := version.ParseGeneric(st.Version)
		if err != nil {
			continue
		}
		if low == nil || v.LessThan(low) {
			low = v
		}
	}
	if low == nil {
		return ""
	}
	return low.String()
}
