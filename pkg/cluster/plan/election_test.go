package plan_test

import (
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
)

func TestPlanNoLeader(t *testing.T) {
	t0 := plantest.PassAt
	runPlanCases(t, []planCase{
		{
			name:     "a member answers without a member list: a leader is being elected",
			state:    plantest.NoList(t0, time.Time{}),
			progress: api.ReasonElectingLeader,
			message:  []string{"c-0 (term 3, no leader) answer", "waiting for a leader"},
		},
		{
			name:     "still within the bound",
			state:    plantest.NoList(t0.Add(DefaultElectionBound-time.Second), t0),
			progress: api.ReasonElectingLeader,
		},
		{
			name:    "past the bound: no quorum, naming who answers and who does not",
			state:   plantest.NoList(t0.Add(DefaultElectionBound), t0),
			blocked: api.ReasonNoQuorum,
			message: []string{"c-0 (term 3, no leader) answer", "not answering: c-1 (etcd does not answer at its pod), c-2 (its pod is gone)"},
		},
		{
			name:    "nobody answers: said so",
			state:   State{Size: 3, Bootstrapped: true, LastMembers: plantest.LastVoters(0, 1, 2), Pods: plantest.Pods(plantest.Running(0, 0, 1, 2), pulling(1)), Now: t0},
			blocked: api.ReasonEtcdUnreachable,
			message: []string{"no member answered", "c-0 (etcd does not answer at its pod)",
				"c-1 (its etcd container waits: ImagePullBackOff: Back-off pulling image", "c-2 (its pod is gone)"},
		},
	})
}

// pulling is the running pod of member o whose etcd container waits for its image.
func pulling(o int) PodView {
	p := plantest.Running(o, 0, 1, 2)
	p.Waiting = "ImagePullBackOff: Back-off pulling image \"etcd:v9\""
	return p
}
