package plan_test

import (
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
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

// A rollout never takes down a member whose new pod would wait on certificates its Secret does
// not hold yet (the client port moving onto TLS, a user Secret gone bad meanwhile): the member
// keeps serving on the pod it has. A member whose Secret is ready is rolled as usual.
func TestRolloutWaitsForCertificates(t *testing.T) {
	cur := "3.6.16"
	all := []MemberView{plantest.Leader(0), plantest.Voter(1), plantest.Voter(2)}
	statuses := map[int]etcdfacts.Status{0: plantest.Reporting(0, cur, 1000), 1: plantest.Reporting(1, cur, 1000), 2: plantest.Reporting(2, cur, 1000)}
	outdated := plantest.Pods(plantest.Rolled(0, cur, true, time.Hour), plantest.Rolled(1, cur, true, time.Hour), plantest.Rolled(2, cur, true, time.Hour))
	withTLS := func(unready ...int) State {
		s := rolloutState(cur, true, all, outdated, statuses)
		s.Version = cur
		s.TLS = TLSView{Unready: unready}
		return s
	}
	runPlanCases(t, []planCase{
		{
			name:    "the member next in line waits for its Secret",
			state:   withTLS(2),
			blocked: api.ReasonTLSSecretInvalid,
			message: []string{"c-2", "not rolled", "not issued yet"},
		},
		{
			name:     "a ready member is rolled",
			state:    withTLS(),
			want:     &Action{Kind: ActionRollMember, Ordinal: 2, MemberID: 102, Evict: true},
			progress: api.ReasonRollingPods,
		},
	})
}
