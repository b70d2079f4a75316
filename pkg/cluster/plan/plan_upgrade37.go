package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// Which members a rollout to etcd 3.7 replaces rather than restarts on their data, and what a
// member's claim records for it (member.AnnotationDataRanOn). etcd 3.7 cannot replay the log
// entries 3.5 wrote, and a member's log keeps them until its next snapshot: a member whose data
// may hold such entries is replaced (removed, added again as a learner the leader sends a
// snapshot). A member seen running on 3.7 with its log applied has none left: its claim says
// so, durably, before any later step reads it, and it restarts on its data when it goes from
// 3.6 back up to 3.7. A claim written before the record existed, or whose write was lost, says
// nothing, and its member is replaced as before: the safe default.

// replacedOnUpgrade says whether member id, whose pod at ordinal o runs etcd p.Version, must
// be replaced (removed, added again as a learner that the leader sends a snapshot) rather than
// restarted on its data when its pod goes to s.TargetVersion: etcd 3.7 no longer reads the
// log entries 3.5 wrote, and a member's log keeps them until its next snapshot, however long
// it has run 3.6 since (seen: 3.7.3 panics replaying them, "unmarshal should never fail").
// A member that is on 3.7 already, or goes back, restarts on its data; so does one whose claim
// says its data has run on 3.7 (dataRanOn37): it is back on 3.6 after a downgrade, and goes up
// again (the downgrade cancelled, or undone), with no entry older than 3.6 left in its log.
func replacedOnUpgrade(s State, o int, id uint64) bool {
	f, err := version.ParseGeneric(s.Pods[o].Version)
	if err != nil {
		return false
	}
	t, err := version.ParseGeneric(s.TargetVersion)
	if err != nil {
		return false
	}
	return t.Major() == 3 && t.Minor() >= 7 && f.Minor() < 7 && !dataRanOn37(s, o, id)
}

// dataRanOn37: the claim at ordinal o holds the data of member id (its mark), and says that
// data has run on etcd 3.7 or later. A claim being deleted, unmarked, or another member's,
// says nothing.
func dataRanOn37(s State, o int, id uint64) bool {
	c, ok := s.Claims[o]
	if !ok || c.Terminating || id == 0 || c.MemberID != id {
		return false
	}
	v, err := version.ParseGeneric(c.DataRanOn)
	return err == nil && v.Major() == 3 && v.Minor() >= 7
}

// DataRanOnToRecord is what a member's claim must record (member.AnnotationDataRanOn) from the
// member's answer st, given what it records now: st's "major.minor" when it is 3.7 or later
// and newer than recorded, and the member is voting and has applied its log (within
// caughtUpLag of its own raft index, so that every entry its log kept has been read by this
// release); empty when nothing is to be written. The caller checks that st is the answer of
// the member the claim is marked with, through the pod that mounts the claim.
func DataRanOnToRecord(st etcdfacts.Status, recorded string) string {
	v, err := version.ParseGeneric(st.Version)
	if err != nil || st.IsLearner || v.Major() != 3 || v.Minor() < 7 || st.RaftAppliedIndex+caughtUpLag < st.RaftIndex {
		return ""
	}
	if r, err := version.ParseGeneric(recorded); err == nil && r.Major() == v.Major() && r.Minor() >= v.Minor() {
		return ""
	}
	return fmt.Sprintf("%d.%d", v.Major(), v.Minor())
}

// DataRanOnToClear says whether a claim's record (member.AnnotationDataRanOn, recorded) must be
// cleared: it records a release, and one of versions is older than 3.6. The caller passes the
// version the pass builds member pods with (State.TargetVersion), the version the pod that
// mounts the claim is built with, and the version the member on that pod answers with (each
// empty when not known). Data that has run on 3.7 and then on 3.5 holds log entries 3.5
// wrote, which 3.7 cannot replay: its member must be replaced on its next way up to 3.7, as
// any member without the record is.
//
// That is enough for every way back up: etcd goes one minor at a time, so a claim's data goes
// from 3.5 to 3.7 only through a rollout from 3.5 to 3.6, and every pod on the claim that runs
// 3.5 was built by a pass whose target was older than 3.6 (or, made by someone else, is seen
// running it by the pass that rolls it up, which clears before it plans). Clearing in the
// first pass that targets 3.5, before it plans any pod on it, puts the clear ahead of the
// first 3.5 entry; a pod made otherwise is cleared no later than the pass that rolls it up.
func DataRanOnToClear(recorded string, versions ...string) bool {
	if recorded == "" {
		return false
	}
	for _, s := range versions {
		if v, err := version.ParseGeneric(s); err == nil && v.Major() == 3 && v.Minor() < 6 {
			return true
		}
	}
	return false
}
