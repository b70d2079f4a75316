package plan_test

import (
	"testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
)

// A member whose own Secret does not hold its certificates gets no pod: its etcd would start
// without what its peers and clients expect. The members that run are left alone, and the
// other ordinals go on.
func TestPlanWaitsForCertificates(t *testing.T) {
	bad := &TLSProblem{Reason: api.ReasonTLSSecretInvalid, Message: "Secret peers: tls.crt has expired"}
	growing := func(unready ...int) State {
		return State{Name: "c", Size: 3, MembersKnown: true, Members: []MemberView{plantest.Leader(0)},
			Pods: plantest.Pods(plantest.Running(0), plantest.Joining(1, false, 0, 1)), TLS: TLSView{Unready: unready}}
	}
	withProblem := growing(2)
	withProblem.TLS.Problem = bad
	healthy := State{Name: "c", Size: 3, MembersKnown: true,
		Members: []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)},
		Pods:    plantest.Pods(plantest.Running(0), plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2)),
		TLS:     TLSView{Problem: bad, Unready: []int{0, 1, 2}}}
	runPlanCases(t, []planCase{
		{
			name:    "seed: no pod before its certificates",
			state:   State{Name: "c", Size: 3, TLS: TLSView{Unready: []int{0, 1, 2}}},
			blocked: api.ReasonTLSSecretInvalid,
			message: []string{"c-0", "not issued yet"},
		},
		{
			name:    "seed: the Secret's problem is said",
			state:   State{Name: "c", Size: 3, TLS: TLSView{Problem: bad, Unready: []int{0}}},
			blocked: api.ReasonTLSSecretInvalid,
			message: []string{"c-0", "tls.crt has expired"},
		},
		{
			name:    "grow: the next pod waits for its certificates",
			state:   withProblem,
			blocked: api.ReasonTLSSecretInvalid,
			message: []string{"c-2", "tls.crt has expired"},
		},
		{
			name:     "grow: another ordinal unready does not hold this one back",
			state:    growing(5),
			want:     &Action{Kind: ActionCreatePod, Ordinal: 2, ClusterState: "existing", InitialCluster: []int{0, 1, 2}},
			progress: api.ReasonScalingUp,
		},
		{
			name:  "running members keep running on what they have",
			state: healthy,
		},
	})
}
