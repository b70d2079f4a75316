package cluster

import (
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/status"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
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
		Now:                now,
		TargetVersion:      o.memberVersion(),
		SpecVersion:        member.NormalizeVersion(c.Spec.Version),
		DowngradeTarget:    plan.DowngradeTarget(o.statuses),
	}
	s.LastMembers = lastMembers(c)
	o.podViews(&s)
	for _, m := range o.members {
		s.Members = append(s.Members, o.memberView(m))
	}
	s.Alarms = alarmViews(o.alarms, s.Members)
	s.Bootstrapped = s.Bootstrapped || startedBefore(s)
	s.ElectingSince = status.ElectingSince(c)
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
// spec builds now (s.TargetVersion).
func (o *observation) podViews(s *plan.State) {
	c := o.cluster
	for ord, p := range o.pods {
		pv := o.podView(ord, p)
		pv.Outdated = !member.UpToDate(c, p, s.TargetVersion, o.initImage)
		if pv.Outdated {
			_, _, pv.ImageOnly = member.ImageChange(c, p, s.TargetVersion, o.initImage)
		}
		pv.StaleMetadata = !member.PolicyMetadataPatch(c, p).Empty()
		s.Pods[ord] = pv
	}
}

// startedBefore: something written down says a member has started, whatever the status says
// (an EtcdCluster deleted with whenDeleted Retain and applied again): a claim that holds a
// member's data, or a pod marked with its member.
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
// says why).
func (o *observation) memberVersion() string {
	c := o.cluster
	return plan.TargetVersion(c.Spec.Version, c.Status.CurrentVersion, member.HasClaims(&c.Spec), plan.DowngradeTarget(o.statuses))
}
