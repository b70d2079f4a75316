package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// CA rotation of one port (docs/tls.md). etcd reads the CAs it trusts only when it starts and
// its key pair on every new connection (docs/tls-reload.md), so a port moves from its old CAs
// to the new ones in three steps, each taken only once the world shows the one before is done:
//
//  1. TrustingBoth: the members' Secrets trust the old and the new CAs together (Held and
//     Want), and the member pods are restarted onto that by the rollout, one at a time under
//     its gate (each pod records what it trusts: member.AnnotationTrust). The leaves stay those
//     of the old CA.
//  2. Reissuing: once every member pod recorded that it trusts the new CAs, and each that runs
//     accepts a certificate of them on its port, the leaves are taken from the new CAs: no
//     member is restarted (etcd reads its key pair again on each connection). A member's
//     Secret records the switch (Switched), so a member down later does not take it back.
//  3. DroppingOld: once every leaf the operator keeps for the port is of the new CAs, every
//     member serves one (the kubelet has refreshed its Secret volume), and on the client port
//     HoldersRefresh has passed since the switch, the Secrets trust the new CAs alone, and the
//     pods are rolled once more.
//
// Every step is decided again on every pass from the Secrets, the pods' records and what the
// members answer, never from a status: an operator killed at any instant decides the same
// step again, and taking a step twice writes the same Secrets. No leaf of a CA is ever issued
// while a member pod may run without trusting it, and no CA is dropped while a leaf of it is
// kept or served.

// RotationInput is what a pass found of one port's CAs; CAs are named by fingerprint
// (pki.Fingerprint), by trust key (member.KeyPeerCA, ...).
type RotationInput struct {
	// Name is the cluster's, Port the port's ("peer", "client"), for messages.
	Name, Port string
	// Want are the CAs the port's source asks the members to trust once no rotation is under
	// way: the CA the operator issues from (the new one while it rotates), or the ca.crt of a
	// user's Secret.
	Want map[string][]string
	// Held are the CAs the members' Secrets trust now, all of them together.
	Held map[string][]string
	// Switched: a member's Secret records that its leaves were taken from Want's CAs.
	Switched bool
	// SwitchedAt is when, by that record; zero when not switched.
	SwitchedAt time.Time
	// OldLeaves names the leaves the operator keeps for the port (in the members' Secrets and
	// the client Secret) that no CA of Want signed.
	OldLeaves []string
	// Pods are the cluster's member pods by ordinal.
	Pods map[int]RotationPod
	// MembersKnown: etcd's member list answered; Members are its members' ordinals.
	MembersKnown bool
	Members      []int
	// HoldersRefresh, when set, is how long the old CAs are kept at least after the switch
	// to new leaves, for holders of the port's certificates the operator cannot ask (those
	// that mount <name>-client-tls) to get the new ones; Now is the pass's time.
	HoldersRefresh time.Duration
	Now            time.Time
}

// RotationPod is one member pod as a rotation sees it.
type RotationPod struct {
	// Uses: the pod's etcd serves the port over TLS.
	Uses bool
	// Trust is what the pod recorded it trusts (member.ParseTrust); nil when it recorded
	// nothing (made before CA rotation existed).
	Trust       map[string][]string
	Terminating bool
	// Running: the pod runs, with an address.
	Running bool
	Created time.Time
	// Probed: the operator reached the port over TLS this pass. Accepted: the port accepted a
	// client certificate of each CA of Want the operator could present. ServesNew: the
	// certificate the port served is signed by a CA of Want. Problem is what went wrong,
	// when something did.
	Probed, Accepted, ServesNew bool
	Problem                     string
}

// RotationStep is what a pass does about one port's CAs.
type RotationStep struct {
	// Phase is the step the rotation is at; empty when none is under way.
	Phase api.CARotationPhase
	// Bundle: the members' Secrets trust Held and Want together; else Want alone.
	Bundle bool
	// NewLeaves: the port's leaves come from Want's CAs; else the members keep the leaves of
	// the old ones (renewed by the old CA while its key is kept).
	NewLeaves bool
	// Waiting says what the rotation waits for, Since since when (zero: the rollout's own
	// wait, which the rollout reports).
	Waiting string
	Since   time.Time
}

// PlanRotation decides the step of one port's rotation.
func PlanRotation(in RotationInput) RotationStep {
	if SameTrust(in.Held, in.Want) {
		step := RotationStep{NewLeaves: true}
		if o, ok := podToRestamp(in); ok {
			step.Phase, step.Waiting = api.CARotationDroppingOld, fmt.Sprintf(
				"member %s still trusts the old %s CA until the rollout restarts it", naming.Name(in.Name, o), in.Port)
		}
		return step
	}
	step := RotationStep{Phase: api.CARotationTrustingBoth, Bundle: true}
	why, since := untrusting(in)
	step.NewLeaves = in.Switched || why == ""
	if !step.NewLeaves {
		step.Waiting, step.Since = why, since
		return step
	}
	step.Phase = api.CARotationReissuing
	if why == "" {
		why, since = stillOld(in)
	}
	if why != "" {
		step.Waiting, step.Since = why, since
		return step
	}
	step.Phase, step.Bundle = api.CARotationDroppingOld, false
	return step
}

// untrusting says why some member may not trust Want's CAs yet, empty when every one does: a
// member without a pod, a pod going, one made before its Secret trusted them, one that runs
// and did not accept a certificate of them. since is when the wait began for waits that only
// the world can end (zero for the rollout's).
func untrusting(in RotationInput) (why string, since time.Time) {
	if len(in.Pods) > 0 && !in.MembersKnown {
		return "etcd's member list does not answer", time.Time{}
	}
	for _, o := range slices.Sorted(slices.Values(in.Members)) {
		if _, ok := in.Pods[o]; !ok {
			return fmt.Sprintf("member %s has no pod", naming.Name(in.Name, o)), time.Time{}
		}
	}
	for _, o := range SortedOrdinals(in.Pods) {
		p, name := in.Pods[o], naming.Name(in.Name, o)
		switch {
		case !p.Uses:
			continue
		case p.Terminating:
			return fmt.Sprintf("pod %s is going", name), time.Time{}
		case !covers(p.Trust, in.Want):
			return fmt.Sprintf("member %s was started before its Secret trusted the new %s CA; the rollout restarts it", name, in.Port), time.Time{}
		case !p.Running || !p.Probed:
			return fmt.Sprintf("member %s does not answer on its %s port over TLS (%s)", name, in.Port, orNotRunning(p)), p.Created
		case !p.Accepted:
			return fmt.Sprintf("member %s refuses a certificate of the new %s CA although its pod was made on a Secret that trusts it (%s); delete the pod to restart it",
				name, in.Port, p.Problem), p.Created
		}
	}
	return "", time.Time{}
}

// stillOld says why the old CAs may not be dropped yet, empty when they may: a leaf the
// operator keeps is still of them, or a member does not serve one of the new CAs yet.
func stillOld(in RotationInput) (why string, since time.Time) {
	if len(in.OldLeaves) > 0 {
		return fmt.Sprintf("%s still holds a certificate of the old %s CA", strings.Join(in.OldLeaves, ", "), in.Port), in.SwitchedAt
	}
	if until := in.SwitchedAt.Add(in.HoldersRefresh); in.HoldersRefresh > 0 && in.Now.Before(until) {
		return fmt.Sprintf("the old %s CA is kept until %s, for the kubelet to give the pods that mount the client Secret its new certificate",
			in.Port, until.UTC().Format(time.RFC3339)), time.Time{}
	}
	for _, o := range SortedOrdinals(in.Pods) {
		p, name := in.Pods[o], naming.Name(in.Name, o)
		switch {
		case !p.Uses:
		case !p.Running || !p.Probed:
			return fmt.Sprintf("member %s does not answer on its %s port over TLS (%s)", name, in.Port, orNotRunning(p)), in.SwitchedAt
		case !p.ServesNew:
			return fmt.Sprintf("member %s still serves a certificate of the old %s CA: the kubelet has not refreshed its Secret volume yet", name, in.Port), in.SwitchedAt
		}
	}
	return "", time.Time{}
}

func orNotRunning(p RotationPod) string {
	if p.Problem != "" {
		return p.Problem
	}
	return "its pod does not run"
}

// podToRestamp is a pod that recorded it trusts other CAs than want (the old ones too), for
// a key of want it records; such a pod is out of date, and the rollout restarts it.
func podToRestamp(in RotationInput) (int, bool) {
	for _, o := range SortedOrdinals(in.Pods) {
		for k, fps := range in.Pods[o].Trust {
			if want, ok := in.Want[k]; ok && !slices.Equal(fps, want) {
				return o, true
			}
		}
	}
	return 0, false
}

// covers: a pod's record trusts every CA of want, for every key of want. A pod that recorded
// nothing is not known to trust anything.
func covers(trust, want map[string][]string) bool {
	if trust == nil {
		return false
	}
	for k, fps := range want {
		for _, fp := range fps {
			if !slices.Contains(trust[k], fp) {
				return false
			}
		}
	}
	return true
}

// SameTrust: the two hold the same CAs for every key.
func SameTrust(a, b map[string][]string) bool {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if !slices.Equal(sortedSet(a[k]), sortedSet(b[k])) {
			return false
		}
	}
	return true
}

func sortedSet(s []string) []string {
	out := slices.Sorted(slices.Values(s))
	return slices.Compact(out)
}

// DefaultHoldersRefresh is how long a client port keeps its old CAs at least after its leaves
// are switched to the new ones (RotationInput.HoldersRefresh; the operator's
// --client-ca-overlap): the kubelet puts a changed Secret into the pods that mount it on its
// periodic sync of each pod (a minute by default, and as much again for jitter and its
// cache), and applications that mount <name>-client-tls and read it for each connection then
// present the new certificate.
const DefaultHoldersRefresh = 3 * time.Minute

// rotationStuckAfter is how long a rotation may wait between two steps on something only the
// world can end (a member that does not accept the new CA, or does not serve its leaf yet)
// before the cluster is reported Degraded: well past the kubelet's refresh of a Secret volume
// (its sync period and its cache's lifetime), after which the member will not change by
// itself.
const rotationStuckAfter = 5 * time.Minute

// PortRotation is the step of one port's CA rotation, as the pass decided it.
type PortRotation struct {
	Port string
	RotationStep
}

// withRotation reports the CA rotations: a rollout that restarts members for one says so, and
// a rotation that waits between its steps while nothing else is under way is Progressing
// (RotatingCA), and Degraded (CARotationStuck) once it has waited past rotationStuckAfter.
// Nothing is held back for it.
func withRotation(s State, d Decision) Decision {
	if Rolling(d.Progress) {
		for _, r := range s.TLS.Rotations {
			if r.Phase != "" {
				d.Message += fmt.Sprintf("; the %s CA rotates (%s)", r.Port, r.Phase)
			}
		}
		return d
	}
	if d.Action != nil || d.Progress != "" || d.Blocked != "" {
		return d
	}
	for _, r := range s.TLS.Rotations {
		if r.Waiting == "" {
			continue
		}
		msg := fmt.Sprintf("the %s CA rotates (%s) and waits: %s", r.Port, r.Phase, r.Waiting)
		if !r.Since.IsZero() && s.Now.Sub(r.Since) > rotationStuckAfter {
			return Decision{Blocked: api.ReasonCARotationStuck, Message: fmt.Sprintf("%s, for more than %s", msg, rotationStuckAfter)}
		}
		return Decision{Progress: api.ReasonRotatingCA, Message: msg}
	}
	return d
}
