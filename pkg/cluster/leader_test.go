package cluster

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
			state:    noList(t0.Add(electionBound-time.Second), t0),
			progress: api.ReasonElectingLeader,
		},
		{
			name:    "past the bound: no quorum, naming who answers and who does not",
			state:   noList(t0.Add(electionBound), t0),
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

// A short election keeps Available and Degraded as they were (no flip, no Warning); past the
// bound, counted from Progressing's lastTransitionTime, the cluster is reported without quorum.
func TestStatusLeaderElection(t *testing.T) {
	c := newCluster(3)
	c.Name = "c"
	healthy := State{Name: "c", Size: 3, Bootstrapped: true, MembersKnown: true, Members: []MemberView{leader(0), voter(1), voter(2)}, Now: passAt.Add(-time.Hour)}
	c.Status = computeStatus(c, healthy, Decision{})
	if !meta.IsStatusConditionTrue(c.Status.Conditions, string(api.ConditionAvailable)) {
		t.Fatalf("a healthy cluster is not Available: %+v", c.Status.Conditions)
	}
	availableAt := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionAvailable)).LastTransitionTime

	s := noList(passAt, electingSince(c))
	c.Status = computeStatus(c, s, Plan(s))
	avail := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionAvailable))
	deg := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionDegraded))
	prog := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionProgressing))
	if avail.Status != metav1.ConditionTrue || !avail.LastTransitionTime.Equal(&availableAt) || deg.Status != metav1.ConditionFalse {
		t.Errorf("during a short election: Available %+v, Degraded %+v; want them unchanged", avail, deg)
	}
	if prog.Reason != string(api.ReasonElectingLeader) || !prog.LastTransitionTime.Time.Equal(passAt) {
		t.Errorf("Progressing %+v, want ElectingLeader since %s", prog, passAt)
	}
	if c.Status.Phase != api.PhaseRunning {
		t.Errorf("phase %s during a short election, want Running as before", c.Status.Phase)
	}
	if len(c.Status.Members) != 3 || !c.Status.Members[0].Ready {
		t.Errorf("members %+v, want them as last listed", c.Status.Members)
	}

	// A later pass within the bound: the time stays.
	s = noList(passAt.Add(electionBound/2), electingSince(c))
	c.Status = computeStatus(c, s, Plan(s))
	if got := electingSince(c); !got.Equal(passAt) {
		t.Errorf("election read back as since %s, want %s", got, passAt)
	}
	// Past the bound.
	s = noList(passAt.Add(electionBound), electingSince(c))
	c.Status = computeStatus(c, s, Plan(s))
	avail = meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionAvailable))
	deg = meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionDegraded))
	if avail.Status != metav1.ConditionFalse || deg.Status != metav1.ConditionTrue || deg.Reason != string(api.ReasonNoQuorum) ||
		!strings.Contains(deg.Message, "c-0 (term 3, no leader) answer") {
		t.Errorf("past the bound: Available %+v, Degraded %+v; want NoQuorum naming c-0", avail, deg)
	}
}

// pulling is the running pod of member o whose etcd container waits for its image.
func pulling(o int) PodView {
	p := running(o, 0, 1, 2)
	p.Waiting = "ImagePullBackOff: Back-off pulling image \"etcd:v9\""
	return p
}
