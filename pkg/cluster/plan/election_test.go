package plan

import (
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// noList is a cluster of three that ran, whose member c-0 answers (term 3, no leader known)
// while no member list does; c-2's pod is gone.
func noList(now, since time.Time) State {
	return State{Name: "c", Size: 3, Bootstrapped: true, LastMembers: lastVoters(0, 1, 2),
		Pods: pods(running(0, 0, 1, 2), running(1, 0, 1, 2)), Statuses: map[int]etcdutil.Status{0: {ID: 100, RaftTerm: 3}},
		Now: now, ElectingSince: since}
}

func TestPlanNoLeader(t *testing.T) {
	t0 := passAt
	runPlanCases(t, []planCase{
		{
			name:     "a member answers without a member list: a leader is being elected",
			state:    noList(t0, time.Time{}),
			progress: api.ReasonElectingLeader,
			message:  []string{"c-0 (term 3, no leader) answer", "waiting for a leader"},
		},
		{
			name:     "still within the bound",
			state:    noList(t0.Add(ElectionBound-time.Second), t0),
			progress: api.ReasonElectingLeader,
		},
		{
			name:    "past the bound: no quorum, naming who answers and who does not",
			state:   noList(t0.Add(ElectionBound), t0),
			blocked: api.ReasonNoQuorum,
			message: []string{"c-0 (term 3, no leader) answer", "not answering: c-1 (etcd does not answer at its pod), c-2 (its pod is gone)"},
		},
		{
			name:    "nobody answers: said so",
			state:   State{Size: 3, Bootstrapped: true, LastMembers: lastVoters(0, 1, 2), Pods: pods(running(0, 0, 1, 2), pulling(1)), Now: t0},
			blocked: api.ReasonEtcdUnreachable,
			message: []string{"no member answered", "c-0 (etcd does not answer at its pod)",
				"c-1 (its etcd container waits: ImagePullBackOff: Back-off pulling image", "c-2 (its pod is gone)"},
		},
	})
}

// pulling is the running pod of member o whose etcd container waits for its image.
func pulling(o int) PodView {
	p := running(o, 0, 1, 2)
	p.Waiting = "ImagePullBackOff: Back-off pulling image \"etcd:v9\""
	return p
}
