package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// TestRecoverQuorumFromSurvivor runs the recovery against real etcd: of three members, two
// lose their data for good; the planner, from what the survivor answers, restarts it with
// --force-new-cluster; it comes back as a cluster of one with the same member ID and every
// key, the planner then drops the flag, and a new member joins it.
func TestRecoverQuorumFromSurvivor(t *testing.T) {
	t.Parallel()
	members := etcdtest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kv, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.ClientURLs(members...), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	for i := range 20 {
		if _, err := kv.Put(ctx, fmt.Sprintf("key-%02d", i), "value"); err != nil {
			t.Fatalf("writing: %v", err)
		}
	}
	survivor := members[0]
	id := survivor.ID()
	last := make([]plan.LastMember, 0, 3)
	for o, m := range members {
		last = append(last, plan.LastMember{Ordinal: o, ID: m.ID()})
	}

	// Two members go with their data.
	for _, m := range members[1:] {
		m.Stop()
		if err := os.RemoveAll(m.Dir); err != nil {
			t.Fatal(err)
		}
	}
	f := etcdutil.NewFactory(time.Second, time.Second)
	cli, err := f.New([]string{survivor.ClientURL}, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.MemberList(ctx); err == nil {
		t.Fatal("the member list answers without quorum")
	}
	st, err := cli.Status(ctx, survivor.ClientURL)
	if err != nil {
		t.Fatalf("survivor's status: %v", err)
	}
	s := plantest.OnClaims(plan.State{Name: "c", Size: 3, Bootstrapped: true, LastMembers: last,
		Pods: plantest.Pods(plantest.Running(0, 0, 1, 2)), Claims: plantest.Claims(plantest.MarkedBy(plantest.Claim(0), id)),
		Statuses: map[int]etcdutil.Status{0: st}, Now: time.Now(),
		Recovery: plan.QuorumLossView{Policy: api.QuorumLossManual, RecoverFrom: api.RecoverFromHighest}})
	if d := plan.Plan(s); d.Action == nil || d.Action.Kind != plan.ActionChooseSurvivor || d.Action.Ordinal != 0 ||
		d.Action.RaftIndex != st.RaftIndex || st.RaftIndex == 0 {
		t.Fatalf("plan %+v (%s), want the survivor chosen at raft index %d", d.Action, d.Message, st.RaftIndex)
	}
	s.Recovery.RecoverFrom = "c-0"
	if d := plan.Plan(s); d.Action == nil || d.Action.Kind != plan.ActionForceNewCluster || d.Action.MemberID != id {
		t.Fatalf("plan %+v (%s), want its pod restarted with --force-new-cluster", d.Action, d.Message)
	}

	// The survivor's pod is deleted and made again with the flag.
	survivor.Stop()
	survivor.Restart(t, true)
	list := memberList(ctx, t, f, survivor)
	if len(list) != 1 || list[0].ID != id {
		t.Fatalf("members after --force-new-cluster: %+v, want %x alone", list, id)
	}
	kv1, err := clientv3.New(clientv3.Config{Endpoints: []string{survivor.ClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer kv1.Close()
	got, err := kv1.Get(ctx, "key-", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || got.Count != 20 {
		t.Fatalf("keys after --force-new-cluster: %v, %v; want all 20", got, err)
	}

	// etcd lists the survivor alone: the planner drops the flag before anyone joins.
	s = plantest.OnClaims(plan.State{Name: "c", Size: 3, Bootstrapped: true, MembersKnown: true,
		Members: []plan.MemberView{{Ordinal: 0, ID: list[0].ID, Name: list[0].Name, Healthy: true, Leader: true}},
		Pods:    plantest.Pods(plantest.Forced(plantest.Running(0, 0, 1, 2))), Claims: plantest.Claims(plantest.MarkedBy(plantest.Claim(0), id))})
	if d := plan.Plan(s); d.Action == nil || d.Action.Kind != plan.ActionDeletePod || d.Action.Ordinal != 0 {
		t.Fatalf("plan %+v (%s), want the survivor's pod deleted to drop the flag", d.Action, d.Message)
	}
	survivor.Stop()
	survivor.Restart(t, false)

	// A new member joins the cluster of one, as a learner.
	joiner := etcdtest.Reserve(t, "m1")
	memberList(ctx, t, f, survivor)
	cli2, err := f.New([]string{survivor.ClientURL}, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli2.Close()
	added, err := cli2.MemberAddAsLearner(ctx, joiner.PeerURL)
	if err != nil {
		t.Fatalf("adding a learner: %v", err)
	}
	joiner.Join(t, []*etcdtest.Member{survivor})
	if list = memberList(ctx, t, f, survivor); len(list) != 2 {
		t.Fatalf("members after a join: %+v", list)
	}
	for _, m := range list {
		if m.ID != id && m.ID != added.ID {
			t.Errorf("member %x is neither the survivor nor the new member", m.ID)
		}
	}
}

// memberList asks m for the member list until it answers: a member just restarted may take
// a moment to serve linearizable requests.
func memberList(ctx context.Context, t *testing.T, f etcdutil.Factory, m *etcdtest.Member) []etcdutil.Member {
	t.Helper()
	cli, err := f.New([]string{m.ClientURL}, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for {
		list, err := cli.MemberList(ctx)
		if err == nil {
			return list
		}
		select {
		case <-ctx.Done():
			t.Fatalf("member list of %s: %v", m.Name, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
