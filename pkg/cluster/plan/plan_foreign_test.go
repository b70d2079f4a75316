package plan

import (
	"testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
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
				Members: []MemberView{sick(voter(0)), voter(1), leader(2)},
				Pods:    pods(running(1, 0, 1), running(2, 0, 1, 2)),
				Foreign: []ForeignObject{foreignPod}},
			blocked: api.ReasonForeignObject,
			message: []string{"Pod c-0 (no controller)"},
		},
		{
			name: "a foreign claim of the next member's name: its pod is not created",
			state: State{Size: 3, Bootstrapped: true, MembersKnown: true, Persistent: true,
				Members: []MemberView{leader(0), voter(1)},
				Pods:    pods(running(0, 0), running(1, 0, 1)),
				Claims:  claims(claim(0), claim(1)),
				Foreign: []ForeignObject{foreignClaim}},
			blocked: api.ReasonForeignObject,
			message: []string{"PersistentVolumeClaim data-c-2"},
		},
		{
			// Orphaned with --cascade=orphan, the pods and the Services are foreign together:
			// the message names every one the user must delete.
			name: "foreign pods and a foreign Service: the block names them all",
			state: State{Size: 3, Bootstrapped: true, MembersKnown: true,
				Members: []MemberView{sick(voter(0)), voter(1), leader(2)},
				Pods:    pods(running(1, 0, 1), running(2, 0, 1, 2)),
				Foreign: []ForeignObject{foreignPod, foreignService}},
			blocked: api.ReasonForeignObject,
			message: []string{"Pod c-0 (no controller)", "Service c-client"},
		},
		{
			name: "a foreign client Service: the next member's pod is still created",
			state: State{Size: 2, Bootstrapped: true, MembersKnown: true,
				Members: []MemberView{leader(0)},
				Pods:    pods(running(0, 0)),
				Foreign: []ForeignObject{foreignService}},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: etcdfacts.ClusterStateExisting, InitialCluster: []int{0, 1}},
			progress: api.ReasonScalingUp,
		},
	})
}
