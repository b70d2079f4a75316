package cluster

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/status"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// The planner's input, made from one pass's observation.

// state turns an observation, made at now, into the planner's input.
func (o *observation) state(now time.Time) plan.State {
	c := o.cluster
	s := plan.State{
		Name:               c.Name,
		Namespace:          c.Namespace,
		Size:               int(c.Spec.Size),
		Bootstrapped:       c.Status.Size > 0,
		MembersKnown:       o.membersKnown,
		RestoreProblem:     o.restoreProblem,
		Pods:               map[int]plan.PodView{},
		Version:            plan.LowestVersion(o.statuses),
		Persistent:         member.HasClaims(&c.Spec),
		DeleteScaledClaims: member.Retention(&c.Spec).WhenScaled == api.RetentionDelete,
		Claims:             o.claimViews(),
		Statuses:           o.statuses,
		Recovery:           status.QuorumLoss(c),
		Foreign:            o.foreign,
		RefusedServices:    o.refusedServices,
		TLS:                o.tls,
		ClientTLS:          o.dialTLS,
		Now:                now,
		Bounds:             o.bounds.WithDefaults(),
		TargetVersion:      o.memberVersion(),
		SpecVersion:        member.NormalizeVersion(c.Spec.Version),
		DowngradeTarget:    plan.DowngradeTarget(o.statuses),
	}
	s.PeerMove = plan.PeerMoveView{Final: member.SpecPeerEndpoint(c), Step: o.peer, Recorded: o.peerRecorded(),
		Unforwarded: o.peerUnforwarded}
	s.LastMembers = lastMembers(c)
	if p := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionProgressing)); p != nil && p.Status == metav1.ConditionTrue {
		s.LastProgress = api.ConditionReason(p.Reason)
	}
	o.podViews(&s)
	for _, m := range o.members {
		s.Members = append(s.Members, o.memberView(m))
	}
	s.Alarms = alarmViews(o.alarms, s.Members)
	// status.size is not all that says the cluster served: a status cleared or never written
	// would otherwise let a cluster whose pods all went be bootstrapped again, empty.
	s.Bootstrapped = s.Bootstrapped || startedBefore(s) || recordedClusterID(c) != 0
	s.ElectingSince = status.ElectingSince(c)
	s.Budget = o.budgetView()
	return s
}

// lastMembers are the members the cluster's status last listed.
func lastMembers(c *api.EtcdCluster) []plan.LastMember {
	var out []plan.LastMember
	for _, m := range c.Status.Members {
		if ord, ok := member.Ordinal(c.Name, m.Name); ok {
			out = append(out, plan.LastMember{Ordinal: ord, ID: member.ParseID(m.ID), Learner: m.Learner, Version: m.Version})
		}
	}
	return out
}

// podViews fills in the planner's view of every member pod, with how it compares to what the
// spec builds now (s.TargetVersion, o.clientTarget).
func (o *observation) podViews(s *plan.State) {
	c := o.cluster
	for ord, p := range o.pods {
		pv := o.podView(ord, p)
		target := member.Target{Version: s.TargetVersion, Client: o.clientFor(p), Peer: o.peer.Listen}
		target.Trust = o.trustFor(ord, p, target.Client)
		pv.Outdated = !member.UpToDate(c, p, target, o.initImage)
		if pv.Outdated {
			_, _, pv.ImageOnly = member.ImageChange(c, p, target, o.initImage)
		}
		pv.StaleMetadata = !member.MetadataPatchFor(c, p).Empty()
		s.Pods[ord] = pv
	}
}

// trustFor is what the pod of member ord, serving its client port as client, trusts when made
// now (member.TrustStamp of its Secret, as this pass left it), for p, its pod now (nil: none),
// to be compared with. Empty compares nothing: the pass did not keep the member's Secret
// (no TLS, paused), or p recorded nothing (made before CA rotation existed) and no rotation
// is under way, so it trusts what its Secret holds, which no earlier operator ever changed.
func (o *observation) trustFor(ord int, p *corev1.Pod, client member.ClientMode) string {
	data, ok := o.memberTrust[ord]
	if !ok {
		return ""
	}
	if p != nil && p.Annotations[member.AnnotationTrust] == "" && o.trustSettled {
		return ""
	}
	return member.TrustStamp(data, member.PeerTLS(o.cluster), client.TLS())
}

// startedBefore: something written down says a member has started, whatever the status says
// (an EtcdCluster deleted with whenDeleted Retain and applied again, a status cleared): a claim
// that holds a member's data, or a pod marked with its member. The etcd cluster ID recorded on
// the EtcdCluster (recordClusterID, before any step planned from the first member list) says
// so too, for a cluster on emptyDir whose pods are gone.
func startedBefore(s plan.State) bool {
	for _, cv := range s.Claims {
		if s.Persistent && cv.MemberID != 0 {
			return true
		}
	}
	for _, pv := range s.Pods {
		if pv.MemberID != 0 {
			return true
		}
	}
	return false
}

// alarmViews are the alarms etcd reports, each with the ordinal of the member that raised it
// (-1 when it is not one of the operator's).
func alarmViews(alarms []etcdutil.Alarm, members []plan.MemberView) []plan.AlarmView {
	var out []plan.AlarmView
	for _, a := range alarms {
		v := plan.AlarmView{Ordinal: -1, MemberID: a.MemberID, Type: a.Type}
		for _, m := range members {
			if m.ID == a.MemberID {
				v.Ordinal = m.Ordinal
			}
		}
		out = append(out, v)
	}
	return out
}

// memberVersion is the etcd version member pods are built with (State.TargetVersion, which
// the planner puts in the actions that build a pod): spec.version, unless it is a
// step the operator does not take from the version the cluster runs (versionProblem), or a
// minor downgrade etcd has not enabled yet; then the members keep that version (and status
// says why). The version the cluster runs is status.currentVersion (the oldest a member
// reported when one last answered); with no status (cleared, or never written), the oldest a
// member reports now, or else the oldest a member pod runs: never "none", which would let
// spec.version through unchecked, a skipped minor or an un-enabled downgrade included.
func (o *observation) memberVersion() string {
	c := o.cluster
	running := c.Status.CurrentVersion
	if running == "" {
		running = plan.LowestVersion(o.statuses)
	}
	if running == "" {
		running = o.lowestPodVersion()
	}
	return plan.TargetVersion(c.Spec.Version, running, member.HasClaims(&c.Spec), plan.DowngradeTarget(o.statuses))
}

// lowestPodVersion is the oldest etcd version a member pod is built with; empty when no pod
// says.
func (o *observation) lowestPodVersion() string {
	versions := map[int]etcdfacts.Status{}
	for ord, p := range o.pods {
		if t, ok := member.ReadTemplate(o.cluster.Name, p); ok && t.Version != "" {
			versions[ord] = etcdfacts.Status{Version: t.Version}
		}
	}
	return plan.LowestVersion(versions)
}
