package plan_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// TestPlanPropertyInvariants drives the planner through random sequences of observations of a
// small model of a cluster on claims (spec.size 3 or 5), and checks after every step the
// invariants that no single table test can: whatever the disturbances and whatever the
// planner did before,
//
//  1. a membership change it proposes (RemoveMember of a voter, AddLearner, Promote) never
//     leaves fewer healthy voting members than a majority of the voting members after it
//     (TestPlanNeverLosesQuorum's check, on the states the sequences reach);
//  2. never two pods with --force-new-cluster: no ForceNewCluster while another ordinal's pod
//     has the flag, nor for a second ordinal before the first recovery finished (etcd lists
//     members again), and never two such pods in the model;
//  3. never DeleteClaim of a claim that holds a voting member's data while no other voting
//     member that answers holds the cluster's data (the claim may hold the last copy);
//  4. never a member started on another member's data: CreatePod (or ForceNewCluster) for
//     ordinal o with MemberID m only when o's claim is unmarked or marked m (m 0: a new
//     member, or the member listed at o), and, in the model, no etcd ever starts on a claim
//     whose data is another member's;
//  5. never RemoveMember of a healthy voting member whose data is gone while another ordinal
//     below spec.size has no voting member (rule 5 defers it: each is replaced, the cluster
//     grown back, before the next goes).
//  6. a survivor is chosen to recover a quorum lost for good (ChooseSurvivor) only when, by
//     etcd's membership rather than the members status last listed, fewer voting members hold
//     their data than a majority, and no voting member holding its data has a higher raft
//     index than the survivor.
//  7. etcd never meets more learners than a member lets it hold (--max-learners, read from
//     its pod: one for a pod of etcd 3.5 or without the flag): no member whose etcd runs
//     applies an add that makes more learners than its limit; no etcd restarts with a lower
//     limit on data whose log (after its last snapshot) holds an add of a second learner; and
//     no etcd with a lower limit joins while the etcd of any member that runs (a leader, or
//     one that may become it) holds such an add in memory, from the log it applied, replayed
//     or took when it joined. etcd's downgrade to 3.5 (a disturbance: pods are built for 3.5
//     from then on, the cluster version lowered) has every member snapshot its data, so that
//     their logs hold no add from before, while their etcds still hold it until they restart;
//  8. a joining member's etcd starts with an --initial-cluster equal to the membership (etcd
//     refuses it otherwise, and the pod crash-loops): no membership change while a learner
//     that has not started waits to, but its own removal and promotions.
//
// The model (propModel) keeps, by ordinal: etcd's membership (voter or learner, member ID,
// started), the pod (pending, running, terminating, published, --force-new-cluster, its
// member mark, member-init's "data dir empty"), the claim (there, being deleted, its mark, the
// member whose data it really holds) and whether etcd answers on it (with a raft index). From
// it each pass builds the State the observation code would build: a member list only while a
// majority of the voters answer, the statuses of the members that answer, claims marked as
// syncClaims marks them, LastMembers as status last wrote them (writes are dropped for a
// while, at random: a stale list), the recover-quorum annotation and the time the loss was
// first reported, Now advancing. A step either applies the planner's action to the model (as
// pkg/cluster/act.go and recover.go do) or a disturbance: a pod lost, a claim deleted (it goes
// once its pod is gone: pvc-protection), a member unhealthy for a while, the operator
// restarted (nothing to forget: the planner has no memory; the status write of that pass is
// lost), time jumping past plan.DefaultStuckAfter and the recovery grace period, status writes
// dropped, spec.size changed between 3 and 5, a user annotating recover-quorum=highest, a
// majority of the voters losing their pods and claims at once (a quorum lost for good).
// Each seed builds pods for etcd 3.6 (mostly) or 3.5, and its first pods are a mix: 3.6 with
// --max-learners (as this operator makes them), 3.6 without (an earlier operator's), 3.5; a
// seed may also start from the seed member alone, growing.
// Not modelled: rollouts and version changes but etcd's downgrade to 3.5 as above (the members
// are not rolled), alarms, foreign objects, emptyDir members,
// pods that cannot be pulled or crash-loop (only "member removed" crashes), node loss (pods
// go within a few steps), DNS publication lag, retained claims applied again (LastMembers
// empty), unbound or outdated claims, a member list from a minority.
//
// The default (go test, make unit) runs seeds 1 to 200, 60 steps each, in well under a second.
// More seeds:
//
//	PLAN_PROPERTY_SEEDS=5000 go test ./pkg/cluster/plan -run TestPlanPropertyInvariants
//
// runs seeds 1 to 5000 (PLAN_PROPERTY_STEPS=n changes the steps per sequence). A failure
// prints the seed, the step and every step before it (each disturbance or action, with the
// planner's message); replay one seed, with its full trace logged, with
//
//	PLAN_PROPERTY_SEED=137 go test ./pkg/cluster/plan -run TestPlanPropertyInvariants -v
func TestPlanPropertyInvariants(t *testing.T) {
	seeds, steps := 200, 60
	if v := os.Getenv("PLAN_PROPERTY_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PLAN_PROPERTY_SEEDS=%q: want a positive number", v)
		}
		seeds = n
	}
	if v := os.Getenv("PLAN_PROPERTY_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PLAN_PROPERTY_STEPS=%q: want a positive number", v)
		}
		steps = n
	}
	list := make([]uint64, 0, seeds)
	replay := false
	if v := os.Getenv("PLAN_PROPERTY_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("PLAN_PROPERTY_SEED=%q: want a seed", v)
		}
		list, replay = append(list, n), true
	} else {
		for i := 1; i <= seeds; i++ {
			list = append(list, uint64(i))
		}
	}
	failed := 0
	for _, seed := range list {
		m := newPropModel(seed)
		violation := m.run(steps)
		if replay {
			t.Logf("seed %d (size %d, %s):\n%s", seed, m.size, m.policy, strings.Join(m.trace, "\n"))
		}
		if violation != "" {
			failed++
			t.Errorf("seed %d (size %d, recovery %s), step %d: %s\nreplay: PLAN_PROPERTY_SEED=%d go test ./pkg/cluster/plan -run TestPlanPropertyInvariants -v\n%s",
				seed, m.size, m.policy, m.step, violation, seed, strings.Join(m.trace, "\n"))
			if failed >= 3 {
				t.Fatalf("stopping after %d failing seeds", failed)
			}
		}
	}
}

type propMember struct {
	id      uint64
	learner bool
	started bool
}

type propPod struct {
	running     bool // Running and published; Pending otherwise
	terminating bool
	force       bool
	mark        uint64 // the member ID written on the pod
	dataLost    bool
	etcd        bool   // etcd started on the pod (once: later it restarts on the same data)
	runs        uint64 // the member etcd runs on the pod; 0 when etcd does not run
	state       etcdfacts.ClusterState
	initial     []int
	version     string // etcd's version
	maxLearners int    // --max-learners; 0 without the flag
	holds       bool   // its etcd holds the add of a second learner in memory (invariant 7)
	problem     *plan.PodProblem
	created     time.Time
	deadline    time.Time
}

type propClaim struct {
	terminating bool
	mark        uint64 // the claim's mark (ClaimView.MemberID)
	removed     bool   // flagged as its mark's member removed (ClaimView.Removed)
	data        uint64 // the member whose data the claim holds; 0: empty
	addInLog    bool   // the data's log, after its last snapshot, holds the add of a second learner
}

type propModel struct {
	rng    *rand.Rand
	seed   uint64
	size   int
	policy api.QuorumLossPolicy

	members  map[int]*propMember // etcd's membership, by ordinal
	leader   uint64
	pods     map[int]*propPod
	claims   map[int]*propClaim
	sick     map[int]int // ordinal: unhealthy until that step
	raft     map[uint64]uint64
	commit   uint64
	nextID   uint64
	now      time.Time
	step     int
	last     []plan.LastMember // status.members as last written
	dropTill int               // status writes are dropped until this step
	annot    string            // AnnotationRecoverQuorum
	since    time.Time         // Degraded QuorumLost's lastTransitionTime
	forcing  int               // the ordinal a ForceNewCluster is under way for; -1
	target   string            // the version pods are built for (State.TargetVersion)
	trace    []string
}

func newPropModel(seed uint64) *propModel {
	rng := rand.New(rand.NewPCG(seed, 0x5eed0f9a4e7c1a2b))
	m := &propModel{rng: rng, seed: seed, size: 3, policy: api.QuorumLossManual,
		members: map[int]*propMember{}, pods: map[int]*propPod{}, claims: map[int]*propClaim{},
		sick: map[int]int{}, raft: map[uint64]uint64{}, commit: 1000, nextID: 1000, now: plantest.PassAt, forcing: -1}
	if rng.IntN(2) == 0 {
		m.size = 5
	}
	if rng.IntN(2) == 0 {
		m.policy = api.QuorumLossFromSurvivor
	}
	m.target = "3.6.16"
	if rng.IntN(4) == 0 {
		m.target = propOlder
	}
	n := m.size
	switch rng.IntN(6) {
	case 0, 1: // a scale-up or a scale-down under way
		n = 8 - m.size
	case 2: // the seed alone, growing
		n = 1
	}
	all := make([]int, n)
	for o := range n {
		all[o] = o
	}
	for o := range n {
		id := uint64(o + 100)
		m.members[o] = &propMember{id: id, started: true}
		m.pods[o] = &propPod{running: true, mark: id, runs: id, state: etcdfacts.ClusterStateExisting,
			initial: all, created: m.now.Add(-time.Hour), version: "3.6.16", maxLearners: plan.LearnerCap}
		switch rng.IntN(5) {
		case 0: // made by an operator before --max-learners
			m.pods[o].maxLearners = 0
		case 1:
			m.pods[o].version, m.pods[o].maxLearners = "3.5.21", 0
		}
		m.claims[o] = &propClaim{mark: id, data: id}
		m.raft[id] = m.commit
		m.last = append(m.last, plan.LastMember{Ordinal: o, ID: id})
	}
	m.leader = 100
	return m
}

func (m *propModel) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf("step %2d: ", m.step)+fmt.Sprintf(format, args...))
}

// answers: etcd runs member o's data on o's pod, the member is in etcd's membership, and it is
// not made sick.
func (m *propModel) answers(o int) bool {
	p, mem := m.pods[o], m.members[o]
	return p != nil && !p.terminating && p.running && p.runs != 0 && mem != nil && mem.id == p.runs &&
		m.step >= m.sick[o]
}

func (m *propModel) voters() (voting, healthy int) {
	for o, mem := range m.members {
		if mem.learner {
			continue
		}
		voting++
		if m.answers(o) {
			healthy++
		}
	}
	return voting, healthy
}

func (m *propModel) membersKnown() bool {
	v, h := m.voters()
	return v > 0 && h >= plan.Quorum(v)
}

func (m *propModel) memberByID(id uint64) (int, *propMember) {
	for o, mem := range m.members {
		if mem.id == id {
			return o, mem
		}
	}
	return -1, nil
}

// tick is the world moving on between passes: pods and claims go, pods start, etcd starts on
// the data it finds, a leader is elected, the log grows.
func (m *propModel) tick() string {
	for _, o := range plan.SortedOrdinals(m.pods) {
		if p := m.pods[o]; p.terminating && m.rng.IntN(10) < 7 {
			delete(m.pods, o)
		}
	}
	for _, o := range plan.SortedOrdinals(m.claims) {
		if c := m.claims[o]; c.terminating && m.pods[o] == nil {
			delete(m.claims, o)
		}
	}
	for _, o := range plan.SortedOrdinals(m.pods) {
		p := m.pods[o]
		if p.terminating {
			continue
		}
		c := m.claims[o]
		if !p.running {
			switch {
			case c == nil:
				if p.problem == nil {
					p.problem = &plan.PodProblem{Reason: corev1.PodReasonUnschedulable,
						Message: `persistentvolumeclaim "` + naming.ClaimName("c", o) + `" not found`, Since: m.now}
				}
				continue
			case c.terminating:
				continue
			case m.rng.IntN(10) < 7:
				p.running, p.problem = true, nil
			default:
				continue
			}
		}
		if p.etcd || p.dataLost {
			if mem := m.members[o]; p.runs != 0 && (mem == nil || mem.id != p.runs) {
				p.runs = 0 // a removed member stops
			}
			continue
		}
		if v := m.startEtcd(o, p, c); v != "" {
			return v
		}
	}
	if m.membersKnown() {
		if lo, lm := m.memberByID(m.leader); lm == nil || lm.learner || !m.answers(lo) {
			for _, o := range plan.SortedOrdinals(m.members) {
				if mem := m.members[o]; !mem.learner && m.answers(o) {
					m.leader = mem.id
					break
				}
			}
		}
		m.commit += uint64(1 + m.rng.IntN(5))
		for o, mem := range m.members {
			if m.answers(o) {
				m.raft[mem.id] = m.commit
			}
		}
	}
	return ""
}

// startEtcd is member-init and etcd starting on pod o, on claim c (pkg/memberinit): etcd
// starts at once on a data dir that holds data, whoever's it is; on an empty one, it waits
// until the member is listed (and then a tick or more), and refuses for a member that has
// started before.
func (m *propModel) startEtcd(o int, p *propPod, c *propClaim) string {
	mem := m.members[o]
	switch {
	case p.force && c.data != 0 && c.data == p.mark:
		// A cluster of one: every other member is dropped.
		p.etcd = true
		m.members = map[int]*propMember{o: {id: c.data, started: true}}
		m.leader, p.runs = c.data, c.data
		return m.replays(o, p, c, false)
	case c.data != 0:
		// etcd runs the member whose data it is; one removed from the membership is refused
		// by its peers (it does not answer).
		p.etcd, p.runs = true, c.data
		// Wrong data: not the member the pod was made for, or, for a pod made without one,
		// not the member listed at o (a new member on a removed one's data), or a member
		// listed at another ordinal. A removed member restarted on its own data, from a
		// stale status with no member list, is only refused.
		holder, holderMem := m.memberByID(c.data)
		if p.mark != 0 && p.mark != c.data || p.mark == 0 && (mem != nil && mem.id != c.data || holderMem != nil && holder != o) {
			return fmt.Sprintf("invariant 4: pod %d, made for member %d, started etcd on member %d's data", o, p.mark, c.data)
		}
		if mem != nil && mem.id == c.data {
			mem.started = true
			return m.replays(o, p, c, false)
		}
	case p.force || p.mark != 0 || (mem != nil && mem.started):
		p.dataLost = true
	case mem == nil || !m.membersKnown():
		// member-init holds etcd back until the member is registered, as a member list
		// (linearizable: none without quorum) says
	case m.rng.IntN(2) == 0:
		// member-init sees the member listed at its next poll, and etcd takes a while to
		// start: a pass may see the learner before it has.
	default:
		if want := plan.SortedOrdinals(m.members); !slices.Equal(p.initial, want) {
			return fmt.Sprintf("invariant 8: learner %d's etcd joins with --initial-cluster %v, the membership is %v: etcd refuses it",
				o, p.initial, want)
		}
		p.etcd = true
		c.data, p.runs, mem.started = mem.id, mem.id, true
		return m.replays(o, p, c, true)
	}
	return ""
}

// replays is invariant 7 for an etcd that starts on pod o: restarting on its data, it replays
// that data's log; joining, it takes the leader's, which any member's etcd that runs may be.
// A member joining replays the lowering of the cluster version too, and snapshots its data.
func (m *propModel) replays(o int, p *propPod, c *propClaim, joins bool) string {
	p.holds = c.addInLog
	what := "restarts on data whose log holds"
	if joins {
		what = "joins while a member's etcd that runs holds"
		p.holds = false
		for r, mem := range m.members {
			if q := m.pods[r]; r != o && q != nil && q.etcd && q.runs == mem.id && q.holds {
				p.holds = true
			}
		}
		c.addInLog = p.holds && m.target != propOlder
	}
	if allowed := propLearnersAllowed(p); p.holds && allowed < 2 {
		// etcd checks its --max-learners again when it applies the add it replays or takes
		return fmt.Sprintf("invariant 7: pod %d's etcd (%s, max %d learners) %s the add of a second learner", o, p.version, allowed, what)
	}
	return ""
}

// propLearnersAllowed is how many learners pod p's etcd lets the membership hold.
func propLearnersAllowed(p *propPod) int {
	if p.maxLearners > 1 && !strings.HasPrefix(p.version, "3.5.") {
		return p.maxLearners
	}
	return 1
}

// addLearner is etcd applying the add of a learner at ordinal o on every member whose etcd
// runs, each with its own --max-learners (invariant 7), and act.go marking the learner's
// claim with its new ID in the same pass (markLearnerClaim): once a learner left data there
// unmarked, and the ordinal's next pod, made for a new member, started etcd on it as the
// removed member.
func (m *propModel) addLearner(o int) string {
	m.nextID++
	m.members[o] = &propMember{id: m.nextID, learner: true}
	if c := m.claims[o]; c != nil && !c.terminating && c.mark == 0 {
		c.mark = m.nextID
	}
	n := 0
	for _, mem := range m.members {
		if mem.learner {
			n++
		}
	}
	for _, r := range plan.SortedOrdinals(m.members) {
		p := m.pods[r]
		if p == nil || !p.etcd || p.runs != m.members[r].id {
			continue
		}
		if propLearnersAllowed(p) < n {
			return fmt.Sprintf("invariant 7: member %d (%s, max %d learners) applies an add that makes %d learners",
				r, p.version, propLearnersAllowed(p), n)
		}
		if c := m.claims[r]; n > 1 && c != nil && c.data == p.runs {
			p.holds, c.addInLog = true, true
		}
	}
	return ""
}

// observe is the observation code's bookkeeping (syncClaims' marks) and the State it builds.
func (m *propModel) observe() plan.State {
	known := m.membersKnown()
	if known {
		m.annot, m.since, m.forcing = "", time.Time{}, -1 // clearRecoverQuorum; Degraded clears
		for _, o := range plan.SortedOrdinals(m.members) {
			mem, p, c := m.members[o], m.pods[o], m.claims[o]
			if c != nil && !c.terminating && c.mark == 0 && p != nil {
				c.mark = mem.id
			}
			if p != nil && mem.started && !p.terminating && p.mark == 0 {
				p.mark = mem.id
			}
		}
	}
	s := plantest.OnClaims(plan.State{Name: "c", Namespace: "ns", Size: m.size, Bootstrapped: true, MembersKnown: known,
		Pods: map[int]plan.PodView{}, Claims: map[int]plan.ClaimView{}, Statuses: map[int]etcdfacts.Status{},
		LastMembers: slices.Clone(m.last), Now: m.now, TargetVersion: m.target,
		Recovery: plan.QuorumLossView{Policy: m.policy, Grace: 2 * time.Minute, RecoverFrom: m.annot, Since: m.since}})
	for _, o := range plan.SortedOrdinals(m.members) {
		mem := m.members[o]
		if m.answers(o) {
			s.Statuses[o] = etcdfacts.Status{ID: mem.id, RaftIndex: m.raft[mem.id], RaftTerm: 3}
		}
		if !known {
			continue
		}
		v := plan.MemberView{Ordinal: o, ID: mem.id, Learner: mem.learner, Healthy: m.answers(o),
			Leader: mem.id == m.leader && m.answers(o)}
		if mem.started {
			v.Name = naming.Name("c", o)
		}
		s.Members = append(s.Members, v)
	}
	for o, p := range m.pods {
		v := plan.PodView{Ordinal: o, Phase: corev1.PodPending, Terminating: p.terminating, Published: p.running,
			ClusterState: p.state, InitialCluster: slices.Clone(p.initial), DataLost: p.dataLost, ForceNewCluster: p.force,
			MemberID: p.mark, Problem: p.problem, DeletionDeadline: p.deadline, Created: p.created,
			Version: p.version, MaxLearners: p.maxLearners}
		if p.running {
			v.Phase, v.Node = corev1.PodRunning, "node-"+strconv.Itoa(o)
		}
		s.Pods[o] = v
	}
	for o, c := range m.claims {
		s.Claims[o] = plan.ClaimView{Ordinal: o, Terminating: c.terminating, Bound: true, MemberID: c.mark, Removed: c.removed}
	}
	return s
}

// writeStatus is the status write at the end of a pass: the members etcd listed.
func (m *propModel) writeStatus(s plan.State) {
	if !s.MembersKnown || m.step < m.dropTill {
		return
	}
	m.last = m.last[:0:0]
	for _, v := range plan.SortedMembers(s.Members) {
		m.last = append(m.last, plan.LastMember{Ordinal: v.Ordinal, ID: v.ID, Learner: v.Learner})
	}
}

func (m *propModel) run(steps int) string {
	for m.step = 1; m.step <= steps; m.step++ {
		m.now = m.now.Add(5 * time.Second)
		if v := m.tick(); v != "" {
			return v
		}
		if v := m.modelInvariants(); v != "" {
			return v
		}
		if m.rng.IntN(4) == 0 {
			m.disturb()
			continue
		}
		s := m.observe()
		d := plan.Plan(s)
		if d.Blocked == api.ReasonQuorumLost && m.since.IsZero() {
			m.since = m.now
		}
		m.writeStatus(s)
		if d.Action == nil {
			m.logf("pass (%s): no action: %s%s", m.view(s), d.Blocked, d.Message)
			continue
		}
		m.logf("pass (%s): %s", m.view(s), describe(*d.Action, d.Message))
		if v := checkAction(s, m, *d.Action); v != "" {
			return v
		}
		if v := startingLearnerKept(m, *d.Action); v != "" {
			return v
		}
		if v := m.apply(*d.Action); v != "" {
			return v
		}
	}
	return ""
}

// view is a one-line summary of what the pass saw, for the trace.
func (m *propModel) view(s plan.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "size %d known=%v", s.Size, s.MembersKnown)
	for o := range max(m.size, 5) {
		mem, p, c := m.members[o], m.pods[o], m.claims[o]
		if mem == nil && p == nil && c == nil {
			continue
		}
		fmt.Fprintf(&b, " | %d:", o)
		switch {
		case mem == nil:
			b.WriteString("-")
		case mem.learner:
			fmt.Fprintf(&b, "L%d", mem.id)
		default:
			fmt.Fprintf(&b, "V%d", mem.id)
		}
		if m.answers(o) {
			b.WriteString("+")
		}
		switch {
		case p == nil:
			b.WriteString(" nopod")
		case p.terminating:
			b.WriteString(" pod:term")
		case p.force:
			b.WriteString(" pod:FORCE")
		case p.dataLost:
			b.WriteString(" pod:datalost")
		case p.running:
			b.WriteString(" pod:run")
		default:
			b.WriteString(" pod:pend")
		}
		switch {
		case c == nil:
			b.WriteString(" noclaim")
		default:
			fmt.Fprintf(&b, " claim(mark %d data %d", c.mark, c.data)
			if c.terminating {
				b.WriteString(" term")
			}
			b.WriteString(")")
		}
	}
	var last []string
	for _, l := range s.LastMembers {
		last = append(last, fmt.Sprintf("%d/%d%s", l.Ordinal, l.ID, map[bool]string{true: "L"}[l.Learner]))
	}
	fmt.Fprintf(&b, " | last [%s]", strings.Join(last, " "))
	if s.Recovery.RecoverFrom != "" {
		fmt.Fprintf(&b, " recoverFrom=%s", s.Recovery.RecoverFrom)
	}
	return b.String()
}

func describe(a plan.Action, msg string) string {
	out := fmt.Sprintf("%s %d", a.Kind, a.Ordinal)
	if a.MemberID != 0 {
		out += fmt.Sprintf(" member %d", a.MemberID)
	}
	if a.Transferee != 0 {
		out += fmt.Sprintf(" to %d", a.Transferee)
	}
	return out + " (" + msg + ")"
}

// disturb applies one random disturbance.
func (m *propModel) disturb() {
	k := m.rng.IntN(10)
	switch k {
	case 0, 1: // a pod lost (deleted, evicted)
		if ords := plan.SortedOrdinals(m.pods); len(ords) > 0 {
			o := ords[m.rng.IntN(len(ords))]
			m.deletePod(o)
			m.logf("disturb: pod %d lost", o)
			return
		}
	case 2: // a claim deleted by hand: it goes once its pod is gone
		if ords := plan.SortedOrdinals(m.claims); len(ords) > 0 {
			o := ords[m.rng.IntN(len(ords))]
			m.claims[o].terminating = true
			m.logf("disturb: claim %d deleted", o)
			return
		}
	case 3: // a member unhealthy for a while
		if ords := plan.SortedOrdinals(m.members); len(ords) > 0 {
			o := ords[m.rng.IntN(len(ords))]
			n := 1 + m.rng.IntN(8)
			m.sick[o] = m.step + n
			m.logf("disturb: member %d unhealthy for %d steps", o, n)
			return
		}
	case 4: // the operator restarted: nothing in memory (the planner has none); the status write
		// of the pass it died in is lost
		m.dropTill = max(m.dropTill, m.step+2)
		m.logf("disturb: operator restarted")
		return
	case 5: // time passes past the bounds
		d := plan.DefaultStuckAfter + time.Duration(m.rng.IntN(3))*time.Minute
		m.now = m.now.Add(d)
		m.logf("disturb: %s pass", d)
		return
	case 6: // status writes dropped for a while: LastMembers goes stale
		n := 2 + m.rng.IntN(10)
		m.dropTill = max(m.dropTill, m.step+n)
		m.logf("disturb: status writes dropped for %d steps", n)
		return
	case 7: // spec.size changed
		if m.rng.IntN(3) == 0 {
			m.size = 8 - m.size
			m.logf("disturb: spec.size set to %d", m.size)
			return
		}
		if m.downgrade() {
			m.logf("disturb: etcd's downgrade to 3.5: the cluster version lowered, every member's data snapshotted")
			return
		}
	case 8: // the user asks to recover from the survivor with the highest raft index
		if m.annot == "" && !m.membersKnown() && m.policy == api.QuorumLossManual {
			m.annot = api.RecoverFromHighest
			m.logf("disturb: annotated recover-quorum=highest")
			return
		}
	case 9: // a majority of the voters lose their pods and claims at once (a quorum lost for good)
		var voters []int
		for _, o := range plan.SortedOrdinals(m.members) {
			if !m.members[o].learner {
				voters = append(voters, o)
			}
		}
		if len(voters) > 1 {
			m.rng.Shuffle(len(voters), func(i, j int) { voters[i], voters[j] = voters[j], voters[i] })
			lost := voters[:plan.Quorum(len(voters))]
			for _, o := range lost {
				m.deletePod(o)
				if c := m.claims[o]; c != nil {
					c.terminating = true
				}
			}
			m.logf("disturb: pods and claims of %v lost", lost)
			return
		}
	}
	m.logf("disturb: nothing")
}

// propOlder is the version pods are built for once etcd's downgrade to 3.5 is under way.
const propOlder = "3.5.21"

// downgrade is etcd's downgrade to 3.5, enabled once every member is a voter that answers:
// each member applies the lowering of the cluster version and snapshots its data
// (applierMembership.ClusterVersionSet), and pods are built for 3.5 from then on; the rollout
// of the members is not modelled, nor is etcd refusing joins until it is cancelled.
func (m *propModel) downgrade() bool {
	if m.target == propOlder || !m.membersKnown() {
		return false
	}
	for o, mem := range m.members {
		if mem.learner || !m.answers(o) {
			return false
		}
	}
	m.target = propOlder
	for o, mem := range m.members {
		if c := m.claims[o]; c != nil && c.data == mem.id {
			c.addInLog = false
		}
	}
	return true
}

func (m *propModel) deletePod(o int) {
	p := m.pods[o]
	if p == nil || p.terminating {
		return
	}
	p.terminating, p.runs, p.deadline = true, 0, m.now.Add(30*time.Second)
}

// apply does what pkg/cluster/act.go (and recover.go) does with the action.
func (m *propModel) apply(a plan.Action) string {
	switch a.Kind {
	case plan.ActionCreatePod:
		return m.createPod(a, false)
	case plan.ActionDeletePod:
		m.deletePod(a.Ordinal)
	case plan.ActionDeleteClaim:
		if c := m.claims[a.Ordinal]; c != nil {
			c.terminating = true
		}
	case plan.ActionAddLearner:
		if mem := m.members[a.Ordinal]; mem != nil {
			return fmt.Sprintf("model: AddLearner %d, which has member %d", a.Ordinal, mem.id)
		}
		return m.addLearner(a.Ordinal)
	case plan.ActionPromote:
		if mem := m.members[a.Ordinal]; mem != nil && mem.id == a.MemberID && mem.learner && m.answers(a.Ordinal) {
			mem.learner = false // etcd refuses a learner that has not caught up
		}
	case plan.ActionRemoveMember:
		m.flagRemoved(a.Ordinal, a.MemberID) // flagRemoved, before the removal
		if mem := m.members[a.Ordinal]; mem != nil && mem.id == a.MemberID {
			delete(m.members, a.Ordinal)
			if p := m.pods[a.Ordinal]; p != nil {
				p.runs = 0
			}
		}
	case plan.ActionMoveLeader:
		if o, mem := m.memberByID(a.Transferee); mem != nil && !mem.learner && m.answers(o) {
			m.leader = a.Transferee
		}
	case plan.ActionChooseSurvivor:
		m.annot = naming.Name("c", a.Ordinal)
	case plan.ActionForceNewCluster:
		m.forcing = a.Ordinal
		for o, c := range m.claims { // every other member is dropped: flagged first
			if o != a.Ordinal && c.mark != a.MemberID {
				m.flagRemoved(o, c.mark)
			}
		}
		if p := m.pods[a.Ordinal]; p != nil {
			if p.terminating {
				return ""
			}
			if c := m.claims[a.Ordinal]; c != nil && c.mark == 0 {
				c.mark = a.MemberID
			}
			m.deletePod(a.Ordinal)
			return ""
		}
		return m.createPod(a, true)
	default:
		return fmt.Sprintf("model: unexpected action %s", a.Kind)
	}
	return ""
}

func (m *propModel) createPod(a plan.Action, force bool) string {
	if p := m.pods[a.Ordinal]; p != nil {
		return "" // AlreadyExists: nothing to do
	}
	if m.claims[a.Ordinal] == nil {
		m.claims[a.Ordinal] = &propClaim{}
	}
	m.pods[a.Ordinal] = &propPod{mark: a.MemberID, force: force, state: a.ClusterState,
		initial: slices.Clone(a.InitialCluster), created: m.now, version: a.PodVersion, maxLearners: a.MaxLearners}
	return ""
}

// modelInvariants are the invariants on the model itself, after the world moved.
func (m *propModel) modelInvariants() string {
	var forced []int
	for _, o := range plan.SortedOrdinals(m.pods) {
		if p := m.pods[o]; p.force && !p.terminating {
			forced = append(forced, o)
		}
	}
	if len(forced) > 1 {
		return fmt.Sprintf("invariant 2: pods %v all have --force-new-cluster", forced)
	}
	return ""
}

// checkAction checks the action the planner decided on the State s it saw (invariants 1 to 5).
func checkAction(s plan.State, m *propModel, a plan.Action) string {
	voting, healthy := plan.VotingCounts(s.Members)
	var target *plan.MemberView
	for i := range s.Members {
		if s.Members[i].Ordinal == a.Ordinal && (a.MemberID == 0 || s.Members[i].ID == a.MemberID) {
			target = &s.Members[i]
		}
	}
	switch a.Kind {
	case plan.ActionRemoveMember:
		if target == nil || target.Learner {
			break
		}
		if target.Healthy {
			healthy--
		}
		if healthy < plan.Quorum(voting-1) {
			return fmt.Sprintf("invariant 1: removing voter %d leaves %d healthy of %d voting members", a.Ordinal, healthy, voting-1)
		}
		if target.Healthy && target.Ordinal < s.Size && propDataGone(s, *target) {
			for o := range s.Size {
				if !slices.ContainsFunc(s.Members, func(v plan.MemberView) bool { return v.Ordinal == o && !v.Learner }) {
					return fmt.Sprintf("invariant 5: removing healthy voter %d, whose data is gone, while ordinal %d has no voting member",
						a.Ordinal, o)
				}
			}
		}
	case plan.ActionAddLearner:
		if !s.MembersKnown || healthy < plan.Quorum(voting) {
			return fmt.Sprintf("invariant 1: adding a learner with %d healthy of %d voting members", healthy, voting)
		}
	case plan.ActionPromote:
		if target == nil || !target.Learner {
			return fmt.Sprintf("invariant 1: promoting %d, which is not a learner", a.Ordinal)
		}
		if target.Healthy {
			healthy++
		}
		if healthy < plan.Quorum(voting+1) {
			return fmt.Sprintf("invariant 1: promoting %d leaves %d healthy of %d voting members", a.Ordinal, healthy, voting+1)
		}
	case plan.ActionForceNewCluster:
		for o, p := range s.Pods {
			if o != a.Ordinal && p.ForceNewCluster {
				return fmt.Sprintf("invariant 2: ForceNewCluster %d while pod %d has --force-new-cluster", a.Ordinal, o)
			}
		}
		if m.forcing >= 0 && m.forcing != a.Ordinal {
			return fmt.Sprintf("invariant 2: ForceNewCluster %d while the recovery from %d is under way", a.Ordinal, m.forcing)
		}
		if _, hasPod := s.Pods[a.Ordinal]; !hasPod {
			if v := claimFits(s, m, a); v != "" {
				return v
			}
		}
	case plan.ActionCreatePod:
		if v := claimFits(s, m, a); v != "" {
			return v
		}
	case plan.ActionChooseSurvivor:
		return survivorFits(m, a)
	case plan.ActionDeleteClaim:
		c := m.claims[a.Ordinal]
		if c == nil {
			break
		}
		holder := c.mark
		if holder == 0 {
			holder = c.data
		}
		if ho, mem := m.memberByID(holder); mem == nil || mem.learner || ho != a.Ordinal {
			break
		}
		for o, mem := range m.members {
			if o != a.Ordinal && !mem.learner && m.answers(o) {
				return ""
			}
		}
		return fmt.Sprintf("invariant 3: deleting claim %d, which holds voter %d's data, while no other voting member answers", a.Ordinal, holder)
	}
	return ""
}

// startingLearnerKept is invariant 8 for an action: no add or removal while a learner whose
// etcd has not started yet has a pod that waits to start it, but that learner's own removal.
func startingLearnerKept(m *propModel, a plan.Action) string {
	if a.Kind != plan.ActionAddLearner && a.Kind != plan.ActionRemoveMember {
		return ""
	}
	for _, o := range plan.SortedOrdinals(m.members) {
		mem, p := m.members[o], m.pods[o]
		if !mem.learner || mem.started || p == nil || p.terminating || (a.Kind == plan.ActionRemoveMember && a.Ordinal == o) {
			continue
		}
		return fmt.Sprintf("invariant 8: %s %d while learner %d waits to start on a pod made for the membership now", a.Kind, a.Ordinal, o)
	}
	return ""
}

// survivorFits is invariant 6 for a survivor chosen: by etcd's own membership (not what
// status last listed), fewer voting members hold their data than a majority (waiting could
// not bring quorum back), and no voting member that holds its data has a higher raft index
// than the survivor (its writes would be lost).
func survivorFits(m *propModel, a plan.Action) string {
	voting, held := 0, 0
	for o, mem := range m.members {
		if mem.learner {
			continue
		}
		voting++
		c, p := m.claims[o], m.pods[o]
		if c == nil || c.terminating || c.data != mem.id || (p != nil && p.dataLost) {
			continue
		}
		held++
		if o != a.Ordinal && m.raft[mem.id] > m.raft[a.MemberID] {
			return fmt.Sprintf("invariant 6: survivor %d chosen (raft index %d) while voter %d holds its data at raft index %d",
				a.Ordinal, m.raft[a.MemberID], o, m.raft[mem.id])
		}
	}
	if held >= plan.Quorum(voting) {
		return fmt.Sprintf("invariant 6: survivor %d chosen while %d of %d voting members hold their data: quorum can come back", a.Ordinal, held, voting)
	}
	return ""
}

// claimFits is invariant 4 for a pod made on ordinal a.Ordinal's claim.
func claimFits(s plan.State, m *propModel, a plan.Action) string {
	c, ok := s.Claims[a.Ordinal]
	if !ok || c.MemberID == 0 || c.MemberID == a.MemberID {
		return ""
	}
	if mem := m.members[a.Ordinal]; a.MemberID == 0 && mem != nil && mem.id == c.MemberID {
		return "" // the member listed there, which member-init starts on the data it finds
	}
	if a.MemberID == 0 && !s.MembersKnown {
		// No member list: the member status last listed there is restarted on its own data
		// (etcd refuses it if it was removed since; its claim is replaced once a list answers).
		for _, l := range s.LastMembers {
			if l.Ordinal == a.Ordinal && l.ID == c.MemberID {
				return ""
			}
		}
	}
	return fmt.Sprintf("invariant 4: %s %d for member %d on a claim marked %d", a.Kind, a.Ordinal, a.MemberID, c.MemberID)
}

// propDataGone mirrors the planner's dataGone for a member on claims.
func propDataGone(s plan.State, v plan.MemberView) bool {
	p, hasPod := s.Pods[v.Ordinal]
	c, hasClaim := s.Claims[v.Ordinal]
	intact := hasClaim && !c.Terminating && (c.MemberID == 0 || c.MemberID == v.ID)
	switch {
	case !hasPod || p.Terminating:
		return !intact
	case p.DataLost:
		return true
	default:
		return hasClaim && c.Terminating
	}
}

// flagRemoved is pkg/cluster's flagRemoved: the claim at o, marked with id, flagged as that
// member's removed.
func (m *propModel) flagRemoved(o int, id uint64) {
	if c := m.claims[o]; c != nil && !c.terminating && id != 0 && c.mark == id {
		c.removed = true
	}
}
