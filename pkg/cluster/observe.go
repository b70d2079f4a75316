package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
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
	// budget is the cluster's own disruption budget as cached; nil when it has none.
	budget *policyv1.PodDisruptionBudget
	// bounds are the planner's time bounds the operator was started with.
	bounds plan.Bounds
	// restore is the snapshot a new cluster's seed is restored from (restore.go), and
	// restoreProblem why it cannot be found.
	restore        *member.Restore
	restoreProblem string
	// dialTLS: the operator dials the members over TLS; clientTarget is how member pods serve
	// their client port when built now (client_mode.go).
	dialTLS      bool
	clientTarget member.ClientMode
	// clientHeld: a move onto client TLS is held (holdClientMove); each member pod is current
	// in the client mode it serves.
	clientHeld bool
	// peer is where the members' peer URLs go next (peer_move.go): pods are built listening on
	// peer.Listen. peerUnforwarded are the members whose Service does not forward the move
	// port yet.
	peer            peermove.Step
	peerUnforwarded []int
	// peerCertsHeld: the peers move off TLS and the members' Secrets hold the peer
	// certificates pods listening over TLS mount (peerLeavingSource).
	peerCertsHeld bool
	// tls is what ensureTLS found of the cluster's certificates.
	tls plan.TLSView
	// memberTrust is, by ordinal, what each member's Secret trusts as ensureTLS left it, and
	// trustSettled says that no port's Secrets trust a rotation's bundle (trustFor).
	memberTrust  map[int]map[string][]byte
	trustSettled bool
	// blind, when set, says why the members were not asked this pass (the operator's client
	// certificate is missing): what etcd would answer is not known, not absent.
	blind string
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
		bounds:    r.deps.Bounds,
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
	budget, err := r.observeBudget(c)
	if err != nil {
		return nil, err
	}
	o.budget = budget
	o.restore, o.restoreProblem = r.restoreSource(ctx, c)
	eps, err := r.deps.EndpointSlices.EndpointSlices(c.Namespace).List(labels.SelectorFromSet(labels.Set{
		member.LabelCluster: c.Name}))
	if err != nil {
		return nil, fmt.Errorf("listing endpointslices: %w", err)
	}
	o.published = publishedPods(eps, o.pods)
	r.checkDNS(ctx, c, o)
	if err := r.observeEtcd(ctx, c, o); err != nil {
		return nil, err
	}
	o.observePeers()
	if o.peerUnforwarded, err = r.unforwarded(c, o); err != nil {
		return nil, err
	}
	return o, nil
}

// runningEndpoints are the client URLs of the running member pods, by ordinal and sorted.
func runningEndpoints(o *observation) (map[int]string, []string) {
	endpoints := map[int]string{}
	for ord, p := range o.pods {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			endpoints[ord] = member.PodClientURL(p.Status.PodIP, o.dialTLS)
		}
	}
	all := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		all = append(all, e)
	}
	sort.Strings(all)
	return endpoints, all
}

// observeEtcd asks every running member pod for its member's status, then a voting member
// that answered for the member list and the alarms. A member list that does not answer is
// not an error: o.membersKnown stays false.
func (r *Reconciler) observeEtcd(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	o.dialTLS, o.clientTarget = dialTLS(c, clientModes(c, o.pods)), clientTarget(c, o.pods)
	endpoints, all := runningEndpoints(o)
	if len(endpoints) == 0 {
		return nil
	}
	cli, err := r.clients.get(ctx, c, all)
	if errors.Is(err, errNoClientCertificate) {
		// Nothing answers a client without a certificate. The members are not unknown, they
		// were not asked: the pass changes nothing (blind), and ensureTLS issues it again.
		o.blind = fmt.Sprintf("the operator's client certificate (Secret %s) is missing or not this cluster's, so it asked the members nothing; "+
			"no change is made until it is there", member.ClientTLSSecretName(c.Name))
		return nil
	}
	if err != nil {
		return err
	}
	o.statuses = memberStatuses(ctx, cli, endpoints, r.log(c))
	o.dropForeignEndpoints()

	o.leader = leaderOf(o.statuses)

	// Ask a voting member that answered, the leader first: learners refuse the member list
	// and a follower may lag.
	voters := o.voterEndpoints(0)
	if len(voters) == 0 {
		return nil
	}
	lcli, err := r.clients.get(ctx, c, voters)
	if err != nil {
		return err
	}
	members, err := lcli.MemberList(ctx)
	if err != nil {
		r.log(c).WithError(err).Debug("listing members")
		return nil
	}
	o.members, o.membersKnown = members, true
	if err := r.recordClusterID(ctx, c, o); err != nil {
		return err
	}
	if o.alarms, err = lcli.AlarmList(ctx); err != nil {
		r.log(c).WithError(err).Debug("listing alarms")
	}
	return nil
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
		ep := member.PodClientURL(p.Status.PodIP, o.dialTLS)
		if st.ID == o.leader {
			eps = append([]string{ep}, eps...)
		} else {
			eps = append(eps, ep)
		}
	}
	return eps
}

// statusRetryTimeout bounds a second request to the members that let statusTimeout pass, made
// only when a majority of them did so and fewer than a majority answered: a node or an
// operator short of CPU can let every member miss the first second at once, and a pass must
// not then take a cluster whose members all answer for one without quorum (status would say
// NoQuorum, and the bounds of quorum loss would start counting). One member that is slow
// while the others answer (a learner that has not served yet) costs no pass a second
// request, nor does a member that refuses the connection; a cluster whose majority hangs
// costs each pass this much more. It is the longest the operator's etcd clients let any call
// take.
const statusRetryTimeout = etcdutil.DefaultCallTimeout

// memberStatuses asks every member for its status in parallel, and those that timed out once
// more when they are a majority and fewer than a majority answered.
func memberStatuses(ctx context.Context, cli etcdutil.Client, endpoints map[int]string, log *logrus.Entry) map[int]etcdutil.Status {
	out, timedOut := askStatuses(ctx, cli, endpoints, statusTimeout, log)
	if majority := len(endpoints)/2 + 1; len(out) >= majority || len(timedOut) < majority {
		return out
	}
	again, _ := askStatuses(ctx, cli, timedOut, statusRetryTimeout, log)
	maps.Copy(out, again)
	return out
}

// askStatuses asks the members at endpoints for their status in parallel, each within timeout,
// and returns the answers, and the endpoints of those whose time ran out.
func askStatuses(ctx context.Context, cli etcdutil.Client, endpoints map[int]string, timeout time.Duration,
	log *logrus.Entry) (map[int]etcdutil.Status, map[int]string) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out, timedOut := map[int]etcdutil.Status{}, map[int]string{}
	for ord, ep := range endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer survive(log, "asking a member for its status")
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			st, err := cli.Status(sctx, ep)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				out[ord] = st
			case sctx.Err() != nil && ctx.Err() == nil:
				timedOut[ord] = ep
				fallthrough
			default:
				// Said only at debug: a member pod whose etcd has not started does not answer
				// on every pass, which status reports.
				log.WithError(err).WithField("endpoint", ep).Debug("member did not answer")
			}
		}()
	}
	wg.Wait()
	return out, timedOut
}

// memberOrdinal is the ordinal of an etcd member of the cluster: from its name, or from its
// peer URL's host before it has started (member.MemberOrdinal); ok is false for any other
// member. A new scheme or port in its peer URL changes no member's ordinal.
func (o *observation) memberOrdinal(m etcdutil.Member) (int, bool) {
	return member.MemberOrdinal(o.cluster.Name, o.cluster.Namespace, m)
}

func (o *observation) memberView(m etcdutil.Member) plan.MemberView {
	v := plan.MemberView{Ordinal: -1, ID: m.ID, Name: m.Name, Learner: m.IsLearner, Leader: m.ID == o.leader}
	if len(m.PeerURLs) > 0 {
		v.PeerURL = m.PeerURLs[0]
	}
	if ord, ok := o.memberOrdinal(m); ok {
		v.Ordinal = ord
	}
	if st, ok := o.statuses[v.Ordinal]; ok && v.Ordinal >= 0 && st.ID == m.ID {
		v.Healthy = true
	}
	return v
}
