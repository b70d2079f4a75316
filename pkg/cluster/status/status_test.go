package status

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// TestComputeStatus: (State, Decision) → status, the pass's one input to the three conditions
// and the phase.
func TestComputeStatus(t *testing.T) {
	healthy3 := []plan.MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}
	type conds struct{ available, progressing, degraded api.ConditionReason }
	for _, tc := range []struct {
		name   string
		paused bool
		state  plan.State
		d      plan.Decision
		// true status of each condition: Available, Progressing, Degraded
		available, progressing, degraded bool
		reasons                          conds
		phase                            api.ClusterPhase
		ready                            int32
	}{
		{
			name:      "new cluster, nothing yet",
			state:     plan.State{Size: 3},
			available: false, progressing: false, degraded: false,
			reasons: conds{api.ReasonBootstrapping, api.ReasonReconciled, api.ReasonAsExpected},
			phase:   api.PhasePending,
		},
		{
			name:      "seed being created",
			state:     plan.State{Size: 3},
			d:         plan.Decision{Action: &plan.Action{Kind: plan.ActionCreatePod}, Progress: api.ReasonBootstrapping, Message: "creating seed member c-0"},
			available: false, progressing: true,
			reasons: conds{api.ReasonBootstrapping, api.ReasonBootstrapping, api.ReasonAsExpected},
			phase:   api.PhaseBootstrapping,
		},
		{
			name:      "as spec'd",
			state:     plan.State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: healthy3, Version: "3.6.16"},
			available: true,
			reasons:   conds{api.ReasonClusterHealthy, api.ReasonReconciled, api.ReasonAsExpected},
			phase:     api.PhaseRunning,
			ready:     3,
		},
		{
			name:      "growing",
			state:     plan.State{Size: 5, Bootstrapped: true, MembersKnown: true, Members: healthy3},
			d:         plan.Decision{Progress: api.ReasonScalingUp, Message: "creating pod c-3"},
			available: true, progressing: true,
			reasons: conds{api.ReasonQuorumHealthy, api.ReasonScalingUp, api.ReasonAsExpected},
			phase:   api.PhaseScaling,
			ready:   3,
		},
		{
			name:      "one member unhealthy, being replaced",
			state:     plan.State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: []plan.MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))}},
			d:         plan.Decision{Progress: api.ReasonReplacingMember, Message: "removing member c-2"},
			available: true, progressing: true, degraded: true,
			reasons: conds{api.ReasonQuorumHealthy, api.ReasonReplacingMember, api.ReasonMembersUnhealthy},
			phase:   api.PhaseRecovering,
			ready:   2,
		},
		{
			// Past its bound the planner blocks the rollout (RolloutStuck), which is Degraded.
			name:      "one member restarting for a rollout: expected, not degraded",
			state:     plan.State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: []plan.MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2))}},
			d:         plan.Decision{Progress: api.ReasonUpgrading, Message: "waiting for member c-2 before the next one is rolled"},
			available: true, progressing: true, degraded: false,
			reasons: conds{api.ReasonQuorumHealthy, api.ReasonUpgrading, api.ReasonAsExpected},
			phase:   api.PhaseRollingOut,
			ready:   2,
		},
		{
			name:     "quorum lost",
			state:    plan.State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: []plan.MemberView{plantest.Voter(0), plantest.Sick(plantest.Voter(1)), plantest.Sick(plantest.Voter(2))}},
			d:        plan.Plan(plan.State{Name: "c", Size: 3, Bootstrapped: true, MembersKnown: true, Members: []plan.MemberView{plantest.Voter(0), plantest.Sick(plantest.Voter(1)), plantest.Sick(plantest.Voter(2))}}),
			degraded: true,
			reasons:  conds{api.ReasonNoQuorum, api.ReasonNoQuorum, api.ReasonNoQuorum},
			phase:    api.PhaseDegraded,
			ready:    1,
		},
		{
			name:     "nobody answers a cluster that ran",
			state:    plan.State{Size: 3, Bootstrapped: true, Pods: plantest.Pods(plantest.Running(0))},
			d:        plan.Decision{Blocked: api.ReasonEtcdUnreachable, Message: "no member answered"},
			degraded: true,
			reasons:  conds{api.ReasonNoQuorum, api.ReasonEtcdUnreachable, api.ReasonEtcdUnreachable},
			phase:    api.PhaseDegraded,
		},
		{
			name: "serving, a Secret of its certificates unusable",
			state: plan.State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: healthy3, Version: "3.6.16",
				TLS: plan.TLSView{Problem: &plan.TLSProblem{Reason: api.ReasonTLSSecretInvalid, Message: "Secret peers has expired"}}},
			available: true, degraded: true,
			reasons: conds{api.ReasonClusterHealthy, api.ReasonReconciled, api.ReasonTLSSecretInvalid},
			phase:   api.PhaseDegraded,
			ready:   3,
		},
		{
			name: "serving, a certificate near its end",
			state: plan.State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: healthy3, Version: "3.6.16",
				TLS: plan.TLSView{Expiring: "the certificate in Secret peers expires soon"}},
			available: true, degraded: true,
			reasons: conds{api.ReasonClusterHealthy, api.ReasonReconciled, api.ReasonCertificateExpiring},
			phase:   api.PhaseDegraded,
			ready:   3,
		},
		{
			name:      "paused",
			paused:    true,
			state:     plan.State{Size: 5, Bootstrapped: true, MembersKnown: true, Members: healthy3},
			available: true,
			reasons:   conds{api.ReasonQuorumHealthy, api.ReasonPaused, api.ReasonAsExpected},
			phase:     api.PhasePaused,
			ready:     3,
		},
		{
			name:    "quorum held but no member leads: not serving",
			state:   plan.State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: []plan.MemberView{plantest.Voter(0), plantest.Voter(1), plantest.Voter(2)}},
			reasons: conds{api.ReasonNoQuorum, api.ReasonReconciled, api.ReasonAsExpected},
			phase:   api.PhaseRunning,
			ready:   3,
		},
		{
			name: "NOSPACE alarm: not serving writes, degraded, naming the member",
			state: plan.State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: healthy3,
				Alarms: []plan.AlarmView{{Ordinal: 1, MemberID: 101, Type: etcdutil.AlarmNoSpace}}},
			degraded: true,
			reasons:  conds{api.ReasonAlarmNoSpace, api.ReasonReconciled, api.ReasonAlarmNoSpace},
			phase:    api.PhaseDegraded,
			ready:    3,
		},
		{
			name: "CORRUPT alarm comes before NOSPACE",
			state: plan.State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: healthy3,
				Alarms: []plan.AlarmView{{Ordinal: 1, MemberID: 101, Type: etcdutil.AlarmNoSpace}, {Ordinal: 2, MemberID: 102, Type: etcdutil.AlarmCorrupt}}},
			degraded: true,
			reasons:  conds{api.ReasonAlarmCorrupt, api.ReasonReconciled, api.ReasonAlarmCorrupt},
			phase:    api.PhaseDegraded,
			ready:    3,
		},
		{
			name:      "running another version than spec'd",
			state:     plan.State{Size: 3, Bootstrapped: true, MembersKnown: true, Members: healthy3, Version: "3.5.21"},
			available: true, degraded: true,
			reasons: conds{api.ReasonClusterHealthy, api.ReasonReconciled, api.ReasonVersionChangeUnsupported},
			phase:   api.PhaseRunning,
			ready:   3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(int32(tc.state.Size))
			c.Name, c.Spec.Paused = "c", tc.paused
			tc.state.Name = c.Name
			st := Compute(c, tc.state, tc.d)
			for _, want := range []struct {
				t      api.ConditionType
				true   bool
				reason api.ConditionReason
			}{
				{api.ConditionAvailable, tc.available, tc.reasons.available},
				{api.ConditionProgressing, tc.progressing, tc.reasons.progressing},
				{api.ConditionDegraded, tc.degraded, tc.reasons.degraded},
			} {
				got := meta.FindStatusCondition(st.Conditions, string(want.t))
				wantStatus := metav1.ConditionFalse
				if want.true {
					wantStatus = metav1.ConditionTrue
				}
				if got == nil || got.Status != wantStatus || got.Reason != string(want.reason) || got.ObservedGeneration != c.Generation {
					t.Errorf("%s = %+v, want %s %s", want.t, got, wantStatus, want.reason)
				}
			}
			if st.Phase != tc.phase || st.ReadyMembers != tc.ready {
				t.Errorf("phase %s ready %d, want %s %d", st.Phase, st.ReadyMembers, tc.phase, tc.ready)
			}
			if tc.state.MembersKnown && int(st.Size) != len(tc.state.Members) {
				t.Errorf("size %d, want the %d members etcd lists", st.Size, len(tc.state.Members))
			}
		})
	}
}

// Degraded names each unhealthy member and what its pod says.
func TestDegradedNamesUnhealthyMembers(t *testing.T) {
	c := newCluster(5)
	c.Name = "c"
	gone, stuck := plantest.Running(3), plantest.Running(4)
	gone.Terminating, gone.Node = true, "worker-2"
	stuck.Phase = corev1.PodPending
	s := plan.State{Name: "c", Size: 5, Bootstrapped: true, MembersKnown: true,
		Members: []plan.MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Sick(plantest.Voter(2)), plantest.Sick(plantest.Voter(3)), plantest.Sick(plantest.Voter(4))},
		Pods:    plantest.Pods(plantest.Running(0), plantest.Running(1), gone, stuck)}
	deg := meta.FindStatusCondition(Compute(c, s, plan.Decision{}).Conditions, string(api.ConditionDegraded))
	want := "3 of 5 voting members are unhealthy: c-2 (its pod is gone), c-3 (its pod is terminating on node worker-2), c-4 (its pod is Pending)"
	if deg == nil || deg.Message != want {
		t.Errorf("Degraded = %+v,\nwant message %q", deg, want)
	}
}

// Conditions keep one order (Available, Progressing, Degraded), so that a status computed
// twice from the same input is equal and not written again.
func TestComputeStatusIsStable(t *testing.T) {
	c := newCluster(3)
	s := plan.State{Name: c.Name, Size: 3, Bootstrapped: true, MembersKnown: true, Members: []plan.MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}}
	first := Compute(c, s, plan.Decision{})
	for range 20 {
		c2 := c.DeepCopy()
		again := Compute(c2, s, plan.Decision{})
		for i := range again.Conditions {
			if again.Conditions[i].Type != first.Conditions[i].Type {
				t.Fatalf("condition order changed: %v then %v", first.Conditions, again.Conditions)
			}
		}
	}
	var types []string
	for _, cond := range first.Conditions {
		types = append(types, cond.Type)
	}
	if len(types) != 3 || types[0] != string(api.ConditionAvailable) || types[2] != string(api.ConditionDegraded) {
		t.Errorf("conditions in order %v", types)
	}
	// Fed back, the status computes to itself: nothing to write.
	c.Status = first
	if again := Compute(c, s, plan.Decision{}); !equalConditions(again.Conditions, first.Conditions) {
		t.Errorf("a status fed back changed: %+v then %+v", first.Conditions, again.Conditions)
	}
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A claim that waits for a volume is named with why; members say which claim holds their data.
func TestStatusClaims(t *testing.T) {
	c := newCluster(3)
	c.Name = "c"
	s := plantest.OnClaims(plan.State{Name: "c", Size: 3, Now: plantest.PassAt, Pods: plantest.Pods(plantest.Troubled(plantest.StuckPod(plantest.SeedPod(false)), "Unschedulable",
		"0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.", time.Hour)),
		Claims: plantest.Claims(func() plan.ClaimView {
			cv := plantest.Unbound(plantest.Claim(0))
			cv.Problem = `ProvisioningFailed: storageclass.storage.k8s.io "nope" not found`
			return cv
		}())})
	st := Compute(c, s, plan.Decision{Progress: api.ReasonBootstrapping, Message: "waiting for seed member c-0 to start"})
	deg := meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded))
	if deg == nil || deg.Status != metav1.ConditionTrue || deg.Reason != string(api.ReasonClaimPending) ||
		deg.Message != `claim data-c-0 waits for a volume (ProvisioningFailed: storageclass.storage.k8s.io "nope" not found)` {
		t.Errorf("Degraded = %+v, want ClaimPending naming the claim and its event", deg)
	}

	// A claim that waits only for its pod to be scheduled has no Problem (claimWhy): the
	// scheduler's reason is what Degraded names, not the claim.
	noCPU := plantest.OnClaims(plan.State{Name: "c", Size: 3, Now: plantest.PassAt, Pods: plantest.Pods(plantest.Troubled(plantest.StuckPod(plantest.SeedPod(false)), "Unschedulable",
		"0/1 nodes are available: 1 Insufficient cpu.", time.Hour)), Claims: plantest.Claims(plantest.Unbound(plantest.Claim(0)))})
	st = Compute(c, noCPU, plan.Decision{Progress: api.ReasonBootstrapping, Message: "waiting for seed member c-0 to start"})
	deg = meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded))
	if deg == nil || deg.Reason != string(api.ReasonPodCannotStart) || !strings.Contains(deg.Message, "Insufficient cpu") {
		t.Errorf("Degraded = %+v, want PodCannotStart with the scheduler's Insufficient cpu", deg)
	}

	running3 := plantest.OnClaims(plan.State{Name: "c", Size: 3, Bootstrapped: true, MembersKnown: true,
		Members: []plan.MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}, Claims: plantest.Claims(plantest.Claim(0), plantest.Claim(1), plantest.Claim(2))})
	st = Compute(c, running3, plan.Decision{})
	for _, m := range st.Members {
		if m.Claim != "data-"+m.Name {
			t.Errorf("member %s: claim %q, want data-%s", m.Name, m.Claim, m.Name)
		}
	}
	if deg := meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded)); deg.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v with every claim bound", deg)
	}
}

// A quorum lost for good is reported in the Degraded condition with what to do, and the
// condition's lastTransitionTime is when it was first reported, even though Degraded was True
// already: FromSurvivor's grace period counts from it, pass after pass.
func TestStatusQuorumLost(t *testing.T) {
	c := &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 1}}
	noQuorumAt := time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: string(api.ConditionDegraded),
		Status: metav1.ConditionTrue, Reason: string(api.ReasonEtcdUnreachable), LastTransitionTime: metav1.NewTime(noQuorumAt)})
	s := plantest.LostQuorum(3, plantest.Pods(plantest.Running(0, 0, 1, 2)), plantest.Claims(plantest.Claim(0)), plantest.Answering(0, 42))
	s.Name = "c"
	first := s.Now
	if v := QuorumLoss(c); !v.Since.IsZero() {
		t.Fatalf("loss reported since %s before it was reported", v.Since)
	}

	c.Status = Compute(c, s, plan.Plan(s))
	deg := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionDegraded))
	if deg == nil || deg.Reason != string(api.ReasonQuorumLost) || !deg.LastTransitionTime.Time.Equal(first) {
		t.Fatalf("Degraded = %+v, want QuorumLost since %s", deg, first)
	}
	for _, want := range []string{"2 of 3 voting members lost their data", "c-1 (its claim is gone)", "c-0 (raft index 42, term 3)",
		"kubectl annotate etcdcluster c etcd.operator.dev/recover-quorum=c-0"} {
		if !strings.Contains(deg.Message, want) {
			t.Errorf("Degraded message %q does not say %q", deg.Message, want)
		}
	}
	if c.Status.Phase != api.PhaseDegraded {
		t.Errorf("phase %s, want Degraded", c.Status.Phase)
	}

	// A later pass, FromSurvivor: the time stays; the grace period is counted from it.
	s.Now = first.Add(time.Minute)
	s.Recovery = QuorumLoss(c)
	s.Recovery.Policy = api.QuorumLossFromSurvivor
	if !s.Recovery.Since.Equal(first) {
		t.Fatalf("loss read back as reported since %s, want %s", s.Recovery.Since, first)
	}
	d := plan.Plan(s)
	c.Status = Compute(c, s, d)
	deg = meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionDegraded))
	if !deg.LastTransitionTime.Time.Equal(first) || !strings.Contains(deg.Message, "in 4m0s") {
		t.Errorf("Degraded a minute later = %+v, want QuorumLost since %s, 4m0s left", deg, first)
	}
	// Recovering: Progressing says so, and the phase is Recovering.
	s.Now = first.Add(5 * time.Minute)
	d = plan.Plan(s)
	if d.Action == nil || d.Action.Kind != plan.ActionChooseSurvivor {
		t.Fatalf("past the grace period: %+v, want the survivor chosen", d)
	}
	c.Status = Compute(c, s, d)
	prog := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionProgressing))
	if prog.Reason != string(api.ReasonRecoveringQuorum) || c.Status.Phase != api.PhaseRecovering {
		t.Errorf("Progressing %+v, phase %s: want RecoveringQuorum and Recovering", prog, c.Status.Phase)
	}
}

// status.clientURL is what clients dial now: while the client port moves onto TLS (or off
// it), the scheme every member takes, not the one spec.tls.client is going to.
func TestClientURLFollowsTheMembers(t *testing.T) {
	c := newCluster(3)
	c.Spec.TLS = &api.TLSSpec{Client: &api.TLSSource{}}
	for _, tc := range []struct {
		tls  bool
		want string
	}{
		{false, "http://demo-client.ns.svc:2379"},
		{true, "https://demo-client.ns.svc:2379"},
	} {
		if got := Compute(c, plan.State{Name: c.Name, ClientTLS: tc.tls}, plan.Decision{}).ClientURL; got != tc.want {
			t.Errorf("members take TLS %v: clientURL %s, want %s", tc.tls, got, tc.want)
		}
	}
}
