package plan_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
)

func TestPlanBootstrapAgain(t *testing.T) {
	evicted := plantest.SeedPod(true)
	evicted.Phase = corev1.PodFailed
	runPlanCases(t, []planCase{
		{
			name:     "seed pod gone before the cluster served: the pod made ahead goes first",
			state:    State{Size: 3, Pods: plantest.Pods(plantest.Joining(1, true, 0, 1))},
			want:     &Action{Kind: ActionDeletePod, Ordinal: 1},
			progress: api.ReasonBootstrapping,
			message:  []string{"never served"},
		},
		{
			name:     "seed pod gone before the cluster served, the other pod going: wait",
			state:    State{Size: 3, Pods: plantest.Pods(terminating(plantest.Joining(1, true, 0, 1)))},
			progress: api.ReasonBootstrapping,
			message:  []string{"waiting for the other pods to go"},
		},
		{
			name:     "seed pod evicted before the cluster served: delete it",
			state:    State{Size: 3, Pods: plantest.Pods(evicted, plantest.Joining(1, true, 0, 1))},
			want:     &Action{Kind: ActionDeletePod, Ordinal: 0},
			progress: api.ReasonBootstrapping,
		},
		{
			name:    "seed pod gone after the cluster served: never bootstrapped again",
			state:   State{Size: 3, Bootstrapped: true, Pods: plantest.Pods(plantest.Joining(1, true, 0, 1))},
			blocked: api.ReasonEtcdUnreachable,
		},
	})
}

// A cluster restored from a snapshot that cannot be found creates no seed: no empty cluster
// starts in its place. Found, the seed is created as for any new cluster (act.go gives it its
// restore); once the cluster has served, the snapshot no longer matters.
func TestPlanBootstrapFromBackup(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name:    "snapshot not found: no seed",
			state:   State{Size: 3, RestoreProblem: "EtcdBackup b has not succeeded"},
			blocked: api.ReasonRestoreFailed,
			message: []string{"EtcdBackup b has not succeeded"},
		},
		{
			name:     "snapshot found: the seed is created",
			state:    State{Size: 3},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 0, ClusterState: "new", InitialCluster: []int{0}},
			progress: api.ReasonBootstrapping,
		},
		{
			name:     "the seed's pod exists: the problem neither deletes nor stops it",
			state:    State{Size: 3, RestoreProblem: "EtcdBackup b does not exist", Pods: plantest.Pods(plantest.SeedPod(false))},
			want:     &Action{Kind: ActionCreatePod, Ordinal: 1, ClusterState: "existing", InitialCluster: []int{0, 1}},
			progress: api.ReasonBootstrapping,
		},
	})
}
