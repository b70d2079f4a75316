package plan

import (
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// A member that joins takes the leader's log, and may be sent entries older than the leader's
// last snapshot: etcd keeps the entries before it (SnapshotCatchUpEntries, several thousand)
// in memory, and a young cluster keeps its whole log. If that log holds the add of a second
// learner (rule 4, addAnotherLearner), a joining etcd whose --max-learners is below two
// rejects it when it applies it, and its membership parts from the others' for good.
//
// Rule: on claims, while any pod of the cluster (terminating ones too: their etcd may still
// run and lead) runs etcd with --max-learners above one, a member joins only on a pod that
// takes LearnerCap learners too. When the pods are built for a version without the flag (a
// downgrade to 3.5 under way, or cancelled with a member on 3.5), a joining member's pod is
// built on the oldest version those pods run instead, with the flag; the rollout then moves
// it to the target on its data, as it moves the others.
//
// Why it is enough, from etcd's rules:
//   - Only an etcd that was running when a second learner was added, or that joined or
//     restarted since with that add in the log it took or replayed, can hold it in memory; each
//     ran with the flag (addAnotherLearner adds only when every member's pod, and the joining
//     one's, has it, and this rule keeps it so for joins), and its pod is the cluster's until
//     that etcd stops. A pod made by this operator for etcd 3.6 or later always has the flag,
//     and an image changed in place keeps it; so a pod without it is a 3.5 pod, or one an
//     earlier operator made (docs/upgrades.md: going back to an older operator).
//   - A 3.5 pod is made only once the cluster version is 3.5: a downgrade was enabled, and
//     etcd lowered the cluster version (ClusterVersionSet), which makes every member that
//     applies it, or replays it when it joins, take a snapshot on disk
//     (applierMembership.ClusterVersionSet, forceDiskSnapshot). No learner is added while the
//     downgrade is enabled or a member runs 3.5 (learnersFit). So a member restarted on its
//     data, on 3.5 or 3.6, replays its log from after any such add: it is safe to restart, and
//     it holds the add in memory no more. What remains are the etcds that have not restarted
//     since; their pods still carry the flag, and this rule sees them.
//   - On emptyDir the rule never applies: a minor downgrade is refused there, so a 3.5 pod is
//     made only while a member runs 3.5 (an upgrade from 3.5 set back), and then no learner
//     was added beside another since every member last ran 3.5. Applying it there would make
//     every member replaced for the rollout again on the flagged version, for ever.
//   - Restarting a member on its data is not a join (the member keeps its ID and log).

// joinVersion is the version the pod of a member joining at ordinal o must be built on instead
// of TargetVersion, under the rule above: empty when TargetVersion will do. The oldest version
// that a pod with the flag runs: it runs in the cluster now, so it can join it, and it is the
// nearest to the target (a newer minor, 3.7, could not replay the entries 3.5 wrote).
func joinVersion(s State, o int) string {
	if !s.Persistent || etcdfacts.TakesMaxLearners(s.TargetVersion) {
		return ""
	}
	var oldest *version.Version
	for ord, p := range s.Pods {
		if ord == o || learnersAllowed(p) < 2 {
			continue
		}
		v, err := version.ParseGeneric(p.Version)
		if err == nil && (oldest == nil || v.LessThan(oldest)) {
			oldest = v
		}
	}
	if oldest == nil {
		return ""
	}
	return oldest.String()
}

// joinLacksFlag: pod p, made for the member to join at ordinal o, cannot be added under the
// rule above: it lets the membership hold fewer learners than the other pods' etcds may have
// seen added. It holds no member yet and member-init holds its etcd back, so it is made again.
func joinLacksFlag(s State, o int, p PodView) bool {
	return joinVersion(s, o) != "" && learnersAllowed(p) < LearnerCap
}

// isJoin: the pod an action creates is for a member that joins (not one restarting on its
// data, nor a new cluster's seed).
func isJoin(s State, a *Action) bool {
	if a.Kind != ActionCreatePod || a.ClusterState != etcdfacts.ClusterStateExisting {
		return false
	}
	for _, m := range s.Members {
		if m.Ordinal == a.Ordinal {
			return false
		}
	}
	return true
}
