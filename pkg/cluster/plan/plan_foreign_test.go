package plan_test

import (
	"testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
)

// Rule F: a foreign pod or claim of a member's name stops every change; a foreign Service
// alone does not.
func TestPlanForeign(t *testing.T) {
	foreignPod := ForeignObject{Kind: ForeignPod, Name: "c-0", Ordinal: 0, Owner: "no controller"}
	foreignClaim := ForeignObject{Kind: ForeignClaim, Name: "data-c-2", Ordinal: 2, Owner: "controlled by EtcdCluster x"}
	foreignService := ForeignObject{Kind: ForeignService, Name: "c-client", Ordinal: -1, Owner: "controlled by EtcdCluster c-client"}
	runPlanCases(t, []planCase{
		{
			// Without the rule, member 0 (its pod not seen as the cluster's) is taken as
			// lost with its emptyDir and removed.
			name: "a foreign pod of a voting member's name: nothing is removed",
			state: State{Size: 3, Bootstrapped: true, MembersKnown: true,
				Members: []MemberView{plantest.Sick(plantest.Voter(0)), plantest.Voter(1), plantest.Leader(2)},
				Pods:    plantest.Pods(plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2)),
				Foreign: []ForeignObject{foreignPod}},
			blocked: api.ReasonForeignObject,
			message: []string{"Pod c-0 (no controller)"},
		},
		{
			name: "a foreign claim of the next member's name: its pod is not created",
			state: State{Size: 3, Bootstrapped: true, MembersKnown: true, Persistent: true,
				Members: []MemberView{plantest.Leader(0), plantest.Voter(1)},
				Pods:    plantest.Pods(plantest.Running(0, 0), plantest.Running(1, 0, 1)),
				Claims:  plantest.Claims(plantest.Claim(0), plantest.Claim(1)),
				Foreign: []ForeignObject{foreignClaim}},
			blocked: api.ReasonForeignObject,
			message: []string{"PersistentVolumeClaim data-c-2"},
		},
		{
			// Orphaned with --cascade=orphan, the pods and the Services are foreign together:
			// the message names every one the user must delete.
			name: "foreign pods and a foreign Service: the block names them all",
			state: State{Size: 3, Bootstrapped: true, MembersKnown: true,
				Members: []MemberView{plantest.Sick(plantest.Voter(0)), plantest.Voter(1), plantest.Leader(2)},
				Pods:    plantest.Pods(plantest.Running(1, 0, 1), plantest.Running(2, 0, 1, 2)),
				Foreign: []ForeignObject{foreignPod, foreignService}},
			blocked: api.ReasonForeignObject,
			message: []string{"Pod c-0 (no controller)", "Service c-client"},
		},
		{
			name: "a foreign client Service: the next member's pod is still created",
			state: State{Size: 2, Bootstrapped: true, MembersKnown: true,
				Members: []MemberView{plantest.Leader(0)},
				Pods:    plantest.Pods(plantest.Running(0, 0)),
				Foreign: []ForeignObject{foreignService}},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: etcdfacts.ClusterStateExisting, InitialCluster: []int{0, 1}},
			progress: api.ReasonScalingUp,
		},
	})
}
