package cluster

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"go.etcd.io/etcd/server/v3/embed"
)

// TestLearnersAgainstEtcd grows a cluster from its seed to three members with the planner's
// decisions, against real etcd members: each member's etcd is started with the --max-learners
// its pod's command line carries (none: etcd's default of one), joins with its pod's
// --initial-cluster once etcd lists it (as member-init execs it), and etcd itself checks
// both. As in a cluster, a pod is published a pass after it is made (the kubelet, the
// EndpointSlice controller and cluster DNS take a while), and a learner's etcd starts a pass
// after etcd first lists it (member-init polls). When every pod takes two learners, both are added while the seed is the only voter,
// and etcd never refuses an add (it refuses them, for a while, once a second voter joins: its
// strict reconfiguration check); when a pod takes one, no member is ever given a second.
func TestLearnersAgainstEtcd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// seed is the seed pod's --max-learners; ahead, when set, makes pod 2 before the
		// planner does, with that --max-learners (-1: none made ahead).
		seed, ahead int
		twoAtOnce   bool
	}{
		{name: "every pod takes two learners", seed: plan.LearnerCap, ahead: -1, twoAtOnce: true},
		{name: "the seed's pod made without --max-learners", seed: 0, ahead: -1},
		{name: "pod 2 made ahead without --max-learners", seed: plan.LearnerCap, ahead: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newGrowth(t)
			h.startSeed(tc.seed)
			if tc.ahead >= 0 {
				h.makePod(plan.Action{Kind: plan.ActionCreatePod, Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting,
					InitialCluster: []int{0, 1, 2}, PodVersion: h.version, MaxLearners: tc.ahead})
			}
			h.grow()
			if tc.twoAtOnce && (h.mostLearners != 2 || len(h.refused) > 0) {
				t.Errorf("at most %d learners at once, adds refused %v; want both learners added at once, none refused", h.mostLearners, h.refused)
			}
			if !tc.twoAtOnce && h.mostLearners != 1 {
				t.Errorf("%d learners at once with a member that lets etcd hold one", h.mostLearners)
			}
			h.checkMembership()
		})
	}
}

// growth is a cluster grown by the planner against embedded etcd: its pods (built by
// member.Pod, read back as the operator reads them), the etcd member of each pod, and what
// the growth met.
type growth struct {
	t       *testing.T
	ctx     context.Context
	c       *api.EtcdCluster
	version string
	actor   *realActor
	pods    map[int]*corev1.Pod
	etcd    map[int]*etcdtest.Member
	byPeer  map[string]int
	running map[int]bool
	// seen counts the passes that saw each pod, listed holds the members etcd has listed.
	seen   map[int]int
	listed map[int]bool
	start  time.Time
	// mostLearners is the most learners etcd listed at once; refused, the adds etcd refused.
	mostLearners int
	refused      []string
}

func newGrowth(t *testing.T) *growth {
	c := newCluster(3)
	c.Name, c.Namespace = "m", "ns"
	actor, _ := newControl(etcdutil.NewFactory(0, 0), kubefake.NewClientset())
	return &growth{t: t, ctx: context.Background(), c: c, version: "3.6.16", actor: actor,
		pods: map[int]*corev1.Pod{}, etcd: map[int]*etcdtest.Member{}, byPeer: map[string]int{}, running: map[int]bool{},
		seen: map[int]int{}, listed: map[int]bool{}, start: time.Now()}
}

// makePod builds the pod a CreatePod action asks for, and reserves its etcd member, to be
// started with the pod's own --max-learners.
func (h *growth) makePod(a plan.Action) {
	if _, ok := h.pods[a.Ordinal]; ok {
		return
	}
	p := member.Pod(h.c, member.Template{Ordinal: a.Ordinal, ClusterState: a.ClusterState, InitialCluster: a.InitialCluster,
		Version: a.PodVersion, MaxLearners: a.MaxLearners}, "op:test")
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	h.pods[a.Ordinal] = p
	limit := maxLearnersArg(h.t, p)
	h.etcd[a.Ordinal] = etcdtest.ReserveWith(h.t, p.Name, func(cfg *embed.Config) {
		if limit > 0 {
			cfg.MaxLearners = limit
		}
	})
	h.byPeer[h.etcd[a.Ordinal].PeerURL] = a.Ordinal
}

// maxLearnersArg is the --max-learners on the pod's etcd command line; 0 without it.
func maxLearnersArg(t *testing.T, p *corev1.Pod) int {
	for _, a := range p.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, etcdfacts.MaxLearnersFlag+"="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("pod %s: %s", p.Name, a)
			}
			return n
		}
	}
	return 0
}

// startSeed makes the seed's pod and starts its etcd, a cluster of one.
func (h *growth) startSeed(maxLearners int) {
	h.makePod(plan.Action{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0},
		PodVersion: h.version, MaxLearners: maxLearners})
	limit := maxLearnersArg(h.t, h.pods[0])
	seed := etcdtest.StartNamedCluster(h.t, []string{h.pods[0].Name}, func(cfg *embed.Config) {
		if limit > 0 {
			cfg.MaxLearners = limit
		}
	})[0]
	h.etcd[0], h.running[0] = seed, true
	h.byPeer = map[string]int{seed.PeerURL: 0}
}

// grow runs passes (observe, plan, act) until etcd lists three voting members that answer.
func (h *growth) grow() {
	deadline := time.Now().Add(2 * etcdtest.ReadyTimeout)
	for time.Now().Before(deadline) {
		s, done := h.observe()
		if done {
			return
		}
		d := plan.Plan(s)
		if d.Blocked != "" {
			h.t.Fatalf("the planner is blocked: %s: %s", d.Blocked, d.Message)
		}
		time.Sleep(h.act(s, d))
	}
	h.t.Fatalf("the cluster did not grow to three voting members within %s", 2*etcdtest.ReadyTimeout)
}

// observe starts the etcd of every member etcd lists whose etcd does not run yet (member-init),
// and builds the pass's State; done once three voting members answer.
func (h *growth) observe() (plan.State, bool) {
	cli := h.client()
	defer cli.Close()
	list, err := cli.MemberList(h.ctx)
	if err != nil {
		h.t.Fatalf("member list: %v", err)
	}
	s := plan.State{Name: h.c.Name, Namespace: h.c.Namespace, Size: 3, Bootstrapped: true, MembersKnown: true,
		Pods: map[int]plan.PodView{}, TargetVersion: h.version, Now: time.Now()}
	o := &observation{cluster: h.c, published: map[string]bool{}}
	learners, answering := 0, 0
	for _, m := range list {
		ord := h.byPeer[m.PeerURLs[0]]
		h.memberInit(ord)
		v := plan.MemberView{Ordinal: ord, ID: m.ID, Name: m.Name, Learner: m.IsLearner}
		if st, err := cli.Status(h.ctx, h.etcd[ord].ClientURL); err == nil && st.ID == m.ID {
			v.Healthy, v.Leader = true, st.Leader == st.ID
		}
		if m.IsLearner {
			learners++
		} else if v.Healthy {
			answering++
		}
		s.Members = append(s.Members, v)
	}
	h.mostLearners = max(h.mostLearners, learners)
	for ord, p := range h.pods {
		o.published[p.Name] = h.seen[ord] > 0 || ord == 0
		h.seen[ord]++
		s.Pods[ord] = o.podView(ord, p)
	}
	return s, answering == 3 && len(list) == 3
}

// memberInit starts the etcd of listed member ord, on its pod's --initial-cluster, unless it
// runs already or etcd lists it for the first time.
func (h *growth) memberInit(ord int) {
	first := !h.listed[ord]
	h.listed[ord] = true
	if h.running[ord] || first {
		return
	}
	var peers []*etcdtest.Member
	t, _ := member.ReadTemplate(h.c.Name, h.pods[ord])
	for _, o := range t.InitialCluster {
		if o != ord {
			peers = append(peers, h.etcd[o])
		}
	}
	h.etcd[ord].StartJoin(h.t, peers)
	h.running[ord] = true
}

// act takes the decision's action as the actor would, and says how soon to look again.
func (h *growth) act(s plan.State, d plan.Decision) time.Duration {
	if d.Action == nil {
		return whileWaiting
	}
	a := *d.Action
	h.t.Logf("%s: %s", time.Since(h.start).Round(time.Millisecond), d.Message)
	var res Result
	var err error
	switch a.Kind {
	case plan.ActionCreatePod:
		h.makePod(a)
	case plan.ActionAddLearner:
		cli := h.client()
		_, addErr := cli.MemberAddAsLearner(h.ctx, h.etcd[a.Ordinal].PeerURL)
		cli.Close()
		if res, err = addLearner.judge(addErr); res.Refused != nil {
			h.refused = append(h.refused, d.Message+": "+res.Refused.Error())
		}
	case plan.ActionPromote:
		res, err = h.actor.Promote(h.ctx, h.c, h.voters(s), a.Ordinal, a.MemberID)
	default:
		h.t.Fatalf("unexpected action %s %d: %s", a.Kind, a.Ordinal, d.Message)
	}
	if err != nil {
		h.t.Fatalf("%s: %v", d.Message, err)
	}
	if res.RetryIn > 0 {
		return res.RetryIn
	}
	return afterAction
}

// client is a client of the members whose etcd runs.
func (h *growth) client() etcdutil.Client {
	var eps []string
	for _, o := range plan.SortedOrdinals(h.running) {
		eps = append(eps, h.etcd[o].ClientURL)
	}
	cli, err := etcdutil.NewFactory(0, 0).New(eps, etcdutil.ConnConfig{})
	if err != nil {
		h.t.Fatal(err)
	}
	return cli
}

// voters are the client URLs of the voting members.
func (h *growth) voters(s plan.State) []string {
	var out []string
	for _, m := range s.Members {
		if !m.Learner {
			out = append(out, h.etcd[m.Ordinal].ClientURL)
		}
	}
	return out
}

// checkMembership checks that every member's own view of the membership is the same three
// voting members: a member that had rejected a change the others applied (its --max-learners
// lower than the learners they added) would list fewer.
func (h *growth) checkMembership() {
	var want []uint64
	for _, o := range plan.SortedOrdinals(h.etcd) {
		want = append(want, h.etcd[o].ID())
	}
	slices.Sort(want)
	for _, o := range plan.SortedOrdinals(h.etcd) {
		var ids []uint64
		for _, m := range h.etcd[o].Etcd.Server.Cluster().Members() {
			if m.IsLearner {
				h.t.Errorf("member %d lists %s as a learner still", o, m.Name)
			}
			ids = append(ids, uint64(m.ID))
		}
		slices.Sort(ids)
		if !slices.Equal(ids, want) {
			h.t.Errorf("member %d lists members %x, want %x", o, ids, want)
		}
	}
}
