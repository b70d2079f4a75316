package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/status"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// statusTimeout bounds each member's status request: a member that cannot answer this fast
// is not healthy enough to count on for a membership change.
const statusTimeout = time.Second

// observation is everything one pass saw: the informer caches and etcd itself. It is built
// anew every pass; nothing from an earlier pass is trusted.
type observation struct {
	cluster *api.EtcdCluster
	// pods are the member pods the cluster controls, by ordinal.
	pods map[int]*corev1.Pod
	// claims are the member claims of the cluster, by ordinal: those labelled with its name,
	// owned by it or by nobody (a claim kept by an earlier cluster of the same name).
	claims map[int]*corev1.PersistentVolumeClaim
	// foreign are the objects with the name of one of the cluster's objects that are not
	// the cluster's (foreign.go).
	foreign []plan.ForeignObject
	// refusedServices are the cluster's Services the API server refused to create this pass
	// (see State.RefusedServices).
	refusedServices []string
	// claimProblems are why unbound claims wait, by ordinal (see claimProblems).
	claimProblems map[int]string
	// published holds the pod names whose member Service routes to their current IP (the
	// pod's address is in the Service's EndpointSlices) and, unless the operator cannot ask,
	// whose Service's name cluster DNS already answers for.
	published map[string]bool
	// statuses are the answers of the members reached through their pod IPs, by ordinal.
	statuses map[int]etcdutil.Status
	// members is etcd's member list; membersKnown is false when nobody answered.
	members      []etcdutil.Member
	membersKnown bool
	leader       uint64
	// alarms are the alarms etcd reports (asked once the member list answered).
	alarms []etcdutil.Alarm
	// initImage is the operator's own image, which member pods are built with.
	initImage string
}

// observe reads the caches and asks every running member for its status and the member list.
func (r *Reconciler) observe(ctx context.Context, c *api.EtcdCluster) (*observation, error) {
	o := &observation{
		cluster:   c,
		pods:      map[int]*corev1.Pod{},
		claims:    map[int]*corev1.PersistentVolumeClaim{},
		published: map[string]bool{},
		statuses:  map[int]etcdutil.Status{},
		initImage: r.deps.MemberInitImage,
	}
	if err := r.observePods(ctx, c, o); err != nil {
		return nil, err
	}
	if err := r.observeClaims(ctx, c, o); err != nil {
		return nil, err
	}
	if err := r.lookForeign(ctx, c, o); err != nil {
		return nil, err
	}
	eps, err := r.deps.EndpointSlices.EndpointSlices(c.Namespace).List(labels.SelectorFromSet(labels.Set{
		member.LabelCluster: c.Name}))
	if err != nil {
		return nil, fmt.Errorf("listing endpointslices: %w", err)
	}
	o.published = publishedPods(eps, o.pods)
	r.checkDNS(ctx, c, o)

	endpoints := map[int]string{}
	for ord, p := range o.pods {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			endpoints[ord] = member.PodClientURL(p.Status.PodIP)
		}
	}
	if len(endpoints) == 0 {
		return o, nil
	}
	all := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		all = append(all, e)
	}
	sort.Strings(all)
	cli, err := r.deps.Etcd.New(all)
	if err != nil {
		return nil, fmt.Errorf("opening etcd client: %w", err)
	}
	defer cli.Close()
	o.statuses = memberStatuses(ctx, cli, endpoints)
	o.dropForeignEndpoints()

	o.leader = leaderOf(o.statuses)

	// Ask a voting member that answered, the leader first: learners refuse the member list
	// and a follower may lag.
	voters := o.voterEndpoints(0)
	if len(voters) == 0 {
		return o, nil
	}
	lcli, err := r.deps.Etcd.New(voters)
	if err != nil {
		return nil, fmt.Errorf("opening etcd client: %w", err)
	}
	defer lcli.Close()
	members, err := lcli.MemberList(ctx)
	if err != nil {
		r.log(c).WithError(err).Debug("listing members")
		return o, nil
	}
	o.members, o.membersKnown = members, true
	if err := r.recordClusterID(ctx, c, o); err != nil {
		return nil, err
	}
	if o.alarms, err = lcli.AlarmList(ctx); err != nil {
		r.log(c).WithError(err).Debug("listing alarms")
	}
	return o, nil
}

// leaderOf is the leader the members report: the one that says it leads, or else the one
// the others follow.
func leaderOf(statuses map[int]etcdutil.Status) uint64 {
	var followed uint64
	for _, st := range statuses {
		if st.Leader != 0 && st.Leader == st.ID {
			return st.ID
		}
		if followed == 0 {
			followed = st.Leader
		}
	}
	return followed
}

// voterEndpoints are the client URLs of the voting members that answered this pass, the
// leader first, without the member exclude (one being removed may stop at any moment).
func (o *observation) voterEndpoints(exclude uint64) []string {
	var eps []string
	for ord, st := range o.statuses {
		p := o.pods[ord]
		if p == nil || st.IsLearner || (exclude != 0 && st.ID == exclude) {
			continue
		}
		ep := member.PodClientURL(p.Status.PodIP)
		if st.ID == o.leader {
			eps = append([]string{ep}, eps...)
		} else {
			eps = append(eps, ep)
		}
	}
	return eps
}

// memberStatuses asks every member for its status in parallel.
func memberStatuses(ctx context.Context, cli etcdutil.Client, endpoints map[int]string) map[int]etcdutil.Status {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[int]etcdutil.Status{}
	for ord, ep := range endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			st, err := cli.Status(sctx, ep)
			if err != nil {
				return
			}
			mu.Lock()
			out[ord] = st
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// observePods reads the cluster's member pods from the cache into o.pods, adopting those it
// may (not while paused) and recording the others of a member's name as foreign.
func (r *Reconciler) observePods(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	pods, err := r.deps.Pods.Pods(c.Namespace).List(member.ClusterSelector(c.Name))
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	for _, p := range pods {
		ord, ok := member.Ordinal(c.Name, p.Name)
		switch {
		case !ok:
		case metav1.IsControlledBy(p, c):
			o.pods[ord] = p
		case member.Adoptable(c, p):
			if c.Spec.Paused {
				continue
			}
			adopted, err := r.adoptPod(ctx, c, p)
			if err != nil {
				return err
			}
			o.pods[ord] = adopted
		default:
			o.foreign = append(o.foreign, foreignObject(plan.ForeignPod, p, ord))
		}
	}
	return nil
}

// publishedPods reports which pods their member Service routes to: an endpoint with the
// pod's current address in an EndpointSlice of the Service of the pod's name. An address left
// from an earlier pod of the same name does not count.
func publishedPods(eps []*discoveryv1.EndpointSlice, pods map[int]*corev1.Pod) map[string]bool {
	ips := map[string]string{}
	for _, p := range pods {
		if p.Status.PodIP != "" {
			ips[p.Name] = p.Status.PodIP
		}
	}
	out := map[string]bool{}
	for _, s := range eps {
		name := s.Labels[discoveryv1.LabelServiceName]
		ip, ok := ips[name]
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			if slices.Contains(ep.Addresses, ip) {
				out[name] = true
			}
		}
	}
	return out
}

// state turns an observation, made at now, into the planner's input.
func (o *observation) state(now time.Time) plan.State {
	c := o.cluster
	s := plan.State{
		Name:               c.Name,
		Namespace:          c.Namespace,
		Size:               int(c.Spec.Size),
		Bootstrapped:       c.Status.Size > 0,
		MembersKnown:       o.membersKnown,
		Pods:               map[int]plan.PodView{},
		Replaced:           map[int]bool{},
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
	for _, cv := range s.Claims {
		// A claim that holds a member's data: the cluster has started, whatever its status
		// says (an EtcdCluster deleted with whenDeleted Retain and applied again).
		if s.Persistent && cv.MemberID != 0 {
			s.Bootstrapped = true
		}
	}
	for _, m := range c.Status.Members {
		if ord, ok := member.Ordinal(c.Name, m.Name); ok {
			s.Replaced[ord] = true
			s.LastMembers = append(s.LastMembers, plan.LastMember{Ordinal: ord, ID: member.ParseID(m.ID), Learner: m.Learner})
		}
	}
	for ord, p := range o.pods {
		pv := o.podView(ord, p)
		pv.Outdated = !member.UpToDate(c, p, s.TargetVersion, o.initImage)
		if pv.Outdated {
			_, _, pv.ImageOnly = member.ImageChange(c, p, s.TargetVersion, o.initImage)
		}
		pv.StaleMetadata = !member.PolicyMetadataPatch(c, p).Empty()
		s.Pods[ord] = pv
		if pv.MemberID != 0 {
			// A pod marked with its member: that member has started, so the cluster has.
			s.Bootstrapped = true
		}
	}
	for _, m := range o.members {
		s.Members = append(s.Members, o.memberView(m))
	}
	for _, a := range o.alarms {
		v := plan.AlarmView{Ordinal: -1, MemberID: a.MemberID, Type: a.Type}
		for _, m := range s.Members {
			if m.ID == a.MemberID {
				v.Ordinal = m.Ordinal
			}
		}
		s.Alarms = append(s.Alarms, v)
	}
	s.ElectingSince = status.ElectingSince(c)
	return s
}

// podView is the planner's view of one member pod.
func (o *observation) podView(ord int, p *corev1.Pod) plan.PodView {
	t, _ := member.ReadTemplate(o.cluster.Name, p)
	v := plan.PodView{
		Ordinal:         ord,
		Phase:           p.Status.Phase,
		Terminating:     p.DeletionTimestamp != nil,
		Published:       o.published[p.Name],
		Unschedulable:   unschedulable(p),
		Node:            p.Spec.NodeName,
		ClusterState:    t.ClusterState,
		InitialCluster:  t.InitialCluster,
		DataLost:        dataLost(p),
		ForceNewCluster: t.ForceNewCluster,
		MemberID:        t.MemberID,
		Problem:         podProblem(p),
		Version:         t.Version,
		Created:         p.CreationTimestamp.Time,
		Waiting:         etcdWaiting(p),
		RestartPending:  member.RestartPending(p),
		NotReady:        !podReady(p),
	}
	if at, err := time.Parse(time.RFC3339, p.Annotations[member.AnnotationRestartedAt]); err == nil {
		v.RestartedAt = at
	}
	if p.DeletionTimestamp != nil {
		v.DeletionDeadline = p.DeletionTimestamp.Time
	}
	return v
}

// memberOrdinal is the ordinal of an etcd member whose one peer URL is one the operator
// gives that ordinal's member (member.IsPeerURL); ok is false for any other member.
func (o *observation) memberOrdinal(m etcdutil.Member) (int, bool) {
	if len(m.PeerURLs) != 1 {
		return 0, false
	}
	name, _ := member.NameFromPeerURL(m.PeerURLs[0])
	ord, ok := member.Ordinal(o.cluster.Name, name)
	if !ok || !member.IsPeerURL(o.cluster.Name, o.cluster.Namespace, ord, m.PeerURLs[0]) {
		return 0, false
	}
	return ord, true
}

func (o *observation) memberView(m etcdutil.Member) plan.MemberView {
	v := plan.MemberView{Ordinal: -1, ID: m.ID, Name: m.Name, Learner: m.IsLearner, Leader: m.ID == o.leader}
	if ord, ok := o.memberOrdinal(m); ok {
		v.Ordinal = ord
	}
	if st, ok := o.statuses[v.Ordinal]; ok && v.Ordinal >= 0 && st.ID == m.ID {
		v.Healthy = true
	}
	return v
}

func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// podReady: the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
