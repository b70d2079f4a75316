package plan

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

var rotationEpoch = time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)

// trustOf is a record of the peer CAs given.
func trustOf(fps ...string) map[string][]string { return map[string][]string{"peer-ca.crt": fps} }

// running is a member pod that runs, trusts the given peer CAs, and answered the probe as said.
func running(accepted, servesNew bool, fps ...string) RotationPod {
	return RotationPod{Uses: true, Trust: trustOf(fps...), Running: true, Created: rotationEpoch,
		Probed: true, Accepted: accepted, ServesNew: servesNew}
}

// rotating is a three-member cluster rotating its peer CA from old to new, pods as given.
func rotating(held []string, pods ...RotationPod) RotationInput {
	in := RotationInput{Name: "demo", Port: "peer", Want: trustOf("new"), Held: trustOf(held...), MembersKnown: true,
		Members: []int{0, 1, 2}, Pods: map[int]RotationPod{}}
	for i, p := range pods {
		in.Pods[i] = p
	}
	return in
}

// rotationCase is a state of a rotation, and the step it decides.
type rotationCase struct {
	name      string
	in        RotationInput
	phase     api.CARotationPhase
	bundle    bool
	newLeaves bool
	waiting   string
	since     time.Time
}

func rotationCases() []rotationCase {
	both := []string{"new", "old"}
	return []rotationCase{
		{name: "at rest: nothing to do", newLeaves: true,
			in: RotationInput{Want: trustOf("new"), Held: trustOf("new"), MembersKnown: true, Members: []int{0},
				Pods: map[int]RotationPod{0: running(true, true, "new")}}},
		{name: "at rest, pods made before rotations recorded nothing: nothing to do", newLeaves: true,
			in: RotationInput{Want: trustOf("new"), Held: trustOf("new"), MembersKnown: true, Members: []int{0},
				Pods: map[int]RotationPod{0: {Uses: true, Running: true}}}},
		{name: "a new CA: the Secrets trust both, the leaves stay", phase: api.CARotationTrustingBoth, bundle: true,
			in:      rotating([]string{"old"}, running(true, false, "old"), running(true, false, "old"), running(true, false, "old")),
			waiting: "member demo-0 was started before its Secret trusted the new peer CA"},
		{name: "pods made before rotations recorded nothing: rolled first", phase: api.CARotationTrustingBoth, bundle: true,
			in:      rotating(both, RotationPod{Uses: true, Running: true, Probed: true, Accepted: true}, running(true, false, "old", "new"), running(true, false, "old", "new")),
			waiting: "member demo-0 was started before"},
		{name: "halfway through the first rollout", phase: api.CARotationTrustingBoth, bundle: true,
			in:      rotating(both, running(true, false, "old", "new"), running(true, false, "old", "new"), running(true, false, "old")),
			waiting: "member demo-2 was started before"},
		{name: "a pod going", phase: api.CARotationTrustingBoth, bundle: true,
			in: func() RotationInput {
				in := rotating(both, running(true, false, "old", "new"), running(true, false, "old", "new"), running(true, false, "old", "new"))
				p := in.Pods[1]
				p.Terminating = true
				in.Pods[1] = p
				return in
			}(),
			waiting: "pod demo-1 is going"},
		{name: "a member without a pod", phase: api.CARotationTrustingBoth, bundle: true,
			in:      rotating(both, running(true, false, "old", "new"), running(true, false, "old", "new")),
			waiting: "member demo-2 has no pod"},
		{name: "no member list", phase: api.CARotationTrustingBoth, bundle: true,
			in: func() RotationInput {
				in := rotating(both, running(true, false, "old", "new"))
				in.MembersKnown, in.Members = false, nil
				return in
			}(),
			waiting: "member list does not answer"},
		{name: "every pod trusts both, one refuses the new CA: its Secret volume was stale", phase: api.CARotationTrustingBoth, bundle: true,
			in:      rotating(both, running(true, false, "old", "new"), running(false, false, "old", "new"), running(true, false, "old", "new")),
			waiting: "member demo-1 refuses a certificate of the new peer CA", since: rotationEpoch},
		{name: "every pod trusts both, one does not answer", phase: api.CARotationTrustingBoth, bundle: true,
			in: rotating(both, running(true, false, "old", "new"), RotationPod{Uses: true, Trust: trustOf("old", "new"), Created: rotationEpoch},
				running(true, false, "old", "new")),
			waiting: "member demo-1 does not answer", since: rotationEpoch},
		{name: "every member accepts the new CA: its leaves are issued", phase: api.CARotationReissuing, bundle: true, newLeaves: true,
			in: func() RotationInput {
				in := rotating(both, running(true, false, "old", "new"), running(true, false, "old", "new"), running(true, false, "old", "new"))
				in.OldLeaves = []string{"Secret demo-0-tls"}
				return in
			}(),
			waiting: "Secret demo-0-tls still holds a certificate of the old peer CA"},
		{name: "switched, a member down meanwhile: the new leaves stay", phase: api.CARotationReissuing, bundle: true, newLeaves: true,
			in: func() RotationInput {
				in := rotating(both, running(true, true, "old", "new"), RotationPod{Uses: true, Trust: trustOf("old", "new"), Created: rotationEpoch},
					running(true, true, "old", "new"))
				in.Switched, in.SwitchedAt = true, rotationEpoch.Add(time.Minute)
				return in
			}(),
			waiting: "member demo-1 does not answer", since: rotationEpoch},
		{name: "switched, a member still serves the old leaf", phase: api.CARotationReissuing, bundle: true, newLeaves: true,
			in: func() RotationInput {
				in := rotating(both, running(true, true, "old", "new"), running(true, false, "old", "new"), running(true, true, "old", "new"))
				in.Switched, in.SwitchedAt = true, rotationEpoch.Add(time.Minute)
				return in
			}(),
			waiting: "member demo-1 still serves a certificate of the old peer CA", since: rotationEpoch.Add(time.Minute)},
		{name: "every member serves the new leaves: the old CA is dropped", phase: api.CARotationDroppingOld, newLeaves: true,
			in: func() RotationInput {
				in := rotating(both, running(true, true, "old", "new"), running(true, true, "old", "new"), running(true, true, "old", "new"))
				in.Switched = true
				return in
			}()},
		{name: "client port: the old CA kept a while for the client Secret's holders", phase: api.CARotationReissuing, bundle: true, newLeaves: true,
			in: func() RotationInput {
				in := rotating(both, running(true, true, "old", "new"), running(true, true, "old", "new"), running(true, true, "old", "new"))
				in.Port, in.Switched, in.SwitchedAt = "client", true, rotationEpoch
				in.HoldersRefresh, in.Now = DefaultHoldersRefresh, rotationEpoch.Add(DefaultHoldersRefresh-time.Second)
				return in
			}(),
			waiting: "the old client CA is kept until"},
		{name: "client port: dropped once its holders had the time", phase: api.CARotationDroppingOld, newLeaves: true,
			in: func() RotationInput {
				in := rotating(both, running(true, true, "old", "new"), running(true, true, "old", "new"), running(true, true, "old", "new"))
				in.Port, in.Switched, in.SwitchedAt = "client", true, rotationEpoch
				in.HoldersRefresh, in.Now = DefaultHoldersRefresh, rotationEpoch.Add(DefaultHoldersRefresh)
				return in
			}()},
		{name: "dropped: pods still trusting the old CA are rolled", phase: api.CARotationDroppingOld, newLeaves: true,
			in:      rotating([]string{"new"}, running(true, true, "new"), running(true, true, "old", "new"), running(true, true, "old", "new")),
			waiting: "member demo-1 still trusts the old peer CA"},
		{name: "a user's ca.crt that adds a CA: the old leaf is of Want, but no pod trusts the added CA yet", phase: api.CARotationTrustingBoth, bundle: true,
			in: func() RotationInput {
				in := rotating([]string{"old"}, running(true, true, "old"), running(true, true, "old"), running(true, true, "old"))
				in.Want = trustOf("new", "old")
				return in
			}(),
			waiting: "member demo-0 was started before"},
		{name: "client port: a pod serving plaintext is not waited for", phase: api.CARotationReissuing, bundle: true, newLeaves: true,
			in: func() RotationInput {
				in := rotating(both, running(true, false, "old", "new"), RotationPod{Running: true}, running(true, false, "old", "new"))
				in.Port, in.OldLeaves = "client", []string{"Secret demo-client-tls"}
				return in
			}(),
			waiting: "Secret demo-client-tls still holds"},
	}
}

func TestPlanRotation(t *testing.T) {
	for _, tc := range rotationCases() {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanRotation(tc.in)
			if got.Phase != tc.phase || got.Bundle != tc.bundle || got.NewLeaves != tc.newLeaves {
				t.Errorf("step %+v, want phase %q, bundle %v, new leaves %v", got, tc.phase, tc.bundle, tc.newLeaves)
			}
			if (tc.waiting == "") != (got.Waiting == "") || !strings.Contains(got.Waiting, tc.waiting) {
				t.Errorf("waiting %q, want %q", got.Waiting, tc.waiting)
			}
			if !got.Since.Equal(tc.since) {
				t.Errorf("since %v, want %v", got.Since, tc.since)
			}
		})
	}
}

// The two promises of a rotation, over many random states: leaves of the new CAs only once
// every member pod records that it trusts them and each that runs accepted them (or a Secret
// records that this was so when they were first issued), and the old CAs dropped only when
// no leaf of them is kept and every member serves one of the new.
func TestPlanRotationInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 3))
	cas := []string{"a", "b", "c"}
	subset := func() []string {
		var out []string
		for _, ca := range cas {
			if rng.IntN(2) == 0 {
				out = append(out, ca)
			}
		}
		return out
	}
	for i := 0; i < 20000; i++ {
		in := RotationInput{Name: "demo", Port: "peer", Want: trustOf(subset()...), Held: trustOf(subset()...),
			Switched: rng.IntN(4) == 0, MembersKnown: rng.IntN(8) != 0, Pods: map[int]RotationPod{}}
		for o := 0; o < 3; o++ {
			if rng.IntN(6) != 0 {
				in.Members = append(in.Members, o)
			}
			if rng.IntN(6) == 0 {
				continue
			}
			p := RotationPod{Uses: rng.IntN(8) != 0, Terminating: rng.IntN(8) == 0, Running: rng.IntN(6) != 0,
				Probed: rng.IntN(6) != 0, Accepted: rng.IntN(4) != 0, ServesNew: rng.IntN(3) != 0}
			if rng.IntN(6) != 0 {
				p.Trust = trustOf(subset()...)
			}
			in.Pods[o] = p
		}
		if rng.IntN(3) == 0 {
			in.OldLeaves = []string{"Secret demo-0-tls"}
		}
		step := PlanRotation(in)
		settled := SameTrust(in.Held, in.Want)
		if step.NewLeaves && !settled && !in.Switched {
			if why, _ := untrusting(in); why != "" {
				t.Fatalf("new leaves while %s: %+v", why, in)
			}
			for o, p := range in.Pods {
				if p.Uses && (p.Terminating || !covers(p.Trust, in.Want) || !p.Running || !p.Probed || !p.Accepted) {
					t.Fatalf("new leaves while pod %d may not trust them (%+v): %+v", o, p, in)
				}
			}
		}
		if !settled && !step.Bundle {
			if len(in.OldLeaves) > 0 {
				t.Fatalf("old CA dropped while a leaf of it is kept: %+v", in)
			}
			for o, p := range in.Pods {
				if p.Uses && (!p.Running || !p.Probed || !p.ServesNew) {
					t.Fatalf("old CA dropped while pod %d may serve a leaf of it (%+v): %+v", o, p, in)
				}
			}
		}
		if !settled && step.Phase == "" {
			t.Fatalf("a rotation under way without a phase: %+v", in)
		}
	}
}

// A rotation that waits with nothing else under way is Progressing, and Degraded once it has
// waited past its bound on the world; a rollout that restarts members for it says so.
func TestWithRotation(t *testing.T) {
	s := State{Name: "demo", Now: rotationEpoch.Add(time.Minute)}
	s.TLS.Rotations = []PortRotation{{Port: "peer", RotationStep: RotationStep{Phase: api.CARotationReissuing,
		Waiting: "member demo-1 still serves a certificate of the old peer CA", Since: rotationEpoch}}}
	if d := withRotation(s, Decision{}); d.Progress != api.ReasonRotatingCA || !strings.Contains(d.Message, "demo-1") {
		t.Errorf("decision %+v, want RotatingCA naming demo-1", d)
	}
	s.Now = rotationEpoch.Add(rotationStuckAfter + time.Second)
	if d := withRotation(s, Decision{}); d.Blocked != api.ReasonCARotationStuck || !strings.Contains(d.Message, "demo-1") {
		t.Errorf("decision %+v, want CARotationStuck naming demo-1", d)
	}
	roll := Decision{Progress: api.ReasonRollingPods, Message: "restarting member demo-2 on its data"}
	if d := withRotation(s, roll); d.Progress != api.ReasonRollingPods || !strings.Contains(d.Message, "peer CA rotates (Reissuing)") {
		t.Errorf("rollout decision %+v, want it to name the rotation", d)
	}
	blocked := Decision{Blocked: api.ReasonQuorumAtRisk, Message: "no"}
	if d := withRotation(s, blocked); d != blocked {
		t.Errorf("a blocked decision became %+v", d)
	}
	s.TLS.Rotations[0].Since = time.Time{}
	if d := withRotation(s, Decision{}); d.Progress != api.ReasonRotatingCA {
		t.Errorf("a wait on the rollout alone is reported %+v, want Progressing", d)
	}
}
