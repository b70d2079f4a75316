package plan

import (
	"fmt"
	"slices"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// TLSView is what a pass found of a cluster's certificates (pkg/cluster/tls.go).
type TLSView struct {
	// Problem, when set, says why a Secret of the cluster's certificates cannot be used
	// (Reason TLSSecretInvalid): members keep what they have, and a member whose own Secret
	// is not ready is not started.
	Problem *TLSProblem
	// Unready are the ordinals whose member Secret (member.TLSSecretName) does not hold
	// every certificate the member's pod mounts: a pod started without them would wait on
	// its volume, or start on nothing it can use.
	Unready []int
	// Expiring, when set, warns that a certificate from a Secret spec.tls names is near its
	// end and was not renewed (Reason CertificateExpiring); nothing is held back for it.
	Expiring string
	// Status is what status.tls reports: the CAs' and the leaves' expiry, and the Secret
	// for clients. nil for a cluster without TLS.
	Status *api.TLSStatus
	// Rotations are the steps of the ports' CA rotations (rotation.go), one per port whose
	// certificates the pass could use.
	Rotations []PortRotation
}

// TLSProblem is why the cluster's certificates cannot be used, for the Degraded condition.
type TLSProblem struct {
	Reason  api.ConditionReason
	Message string
}

// withCertificates holds back a pod the decision would create for a member whose own Secret
// is not ready: its etcd would be started without the certificates its peers and clients
// expect; and a member pod the decision would roll, whose new pod would wait on them (a
// client port moving onto TLS, say). The members that run are left alone: a cluster whose
// Secret went bad keeps running on the copies its members have.
func withCertificates(s State, d Decision) Decision {
	if d.Action == nil || !slices.Contains(s.TLS.Unready, d.Action.Ordinal) {
		return d
	}
	switch d.Action.Kind {
	case ActionCreatePod, ActionForceNewCluster, ActionRollMember, ActionRestartInPlace:
	default:
		return d
	}
	why, reason := "its certificates are not issued yet", api.ReasonTLSSecretInvalid
	if s.TLS.Problem != nil {
		why, reason = s.TLS.Problem.Message, s.TLS.Problem.Reason
	}
	what := "created"
	if d.Action.Kind == ActionRollMember || d.Action.Kind == ActionRestartInPlace {
		what = "rolled"
	}
	return Decision{Blocked: reason, Message: fmt.Sprintf(
		"the pod of member %s is not %s: %s", naming.Name(s.Name, d.Action.Ordinal), what, why)}
}
