package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// fakeRecorder keeps what a Reconciler told its PassRecorder, one line per call.
type fakeRecorder struct{ calls []string }

var _ PassRecorder = (*fakeRecorder)(nil)

func (f *fakeRecorder) ActionTaken(ns, name string, kind plan.ActionKind) {
	f.calls = append(f.calls, fmt.Sprintf("action %s/%s %s", ns, name, kind))
}
func (f *fakeRecorder) MemberReplaced(ns, name string) {
	f.calls = append(f.calls, fmt.Sprintf("replaced %s/%s", ns, name))
}
func (f *fakeRecorder) PassSucceeded(ns, name string, t time.Time) {
	f.calls = append(f.calls, fmt.Sprintf("pass %s/%s %s", ns, name, t.UTC().Format(time.RFC3339)))
}
func (f *fakeRecorder) Forget(ns, name string) {
	f.calls = append(f.calls, fmt.Sprintf("forget %s/%s", ns, name))
}
func (f *fakeRecorder) EtcdClientOpened(ns, name string) {
	f.calls = append(f.calls, fmt.Sprintf("opened %s/%s", ns, name))
}
func (f *fakeRecorder) EtcdClientClosed(ns, name string) {
	f.calls = append(f.calls, fmt.Sprintf("closed %s/%s", ns, name))
}

// An action counts when the actor changed the world: not when the change was made already,
// refused for now, or failed. A member removed to be added again under its name is a
// replacement too; one removed by a scale-down is not.
func TestActRecordsActionsTaken(t *testing.T) {
	c := newCluster(3)
	remove := plan.Action{Kind: plan.ActionRemoveMember, Ordinal: 0, MemberID: 100}
	for _, tc := range []struct {
		name     string
		result   Result
		err      error
		progress api.ConditionReason
		want     []string
	}{
		{"replaced", Result{Changed: true}, nil, api.ReasonReplacingMember,
			[]string{"action ns/demo RemoveMember", "replaced ns/demo"}},
		{"scaled down", Result{Changed: true}, nil, api.ReasonScalingDown, []string{"action ns/demo RemoveMember"}},
		{"removed already", Result{}, nil, api.ReasonReplacingMember, nil},
		{"refused for now", Result{RetryIn: time.Second, Refused: etcdutil.ErrUnhealthy}, nil, api.ReasonReplacingMember, nil},
		{"failed", Result{}, errors.New("boom"), api.ReasonReplacingMember, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fakeRecorder{}
			r := &Reconciler{deps: Deps{Log: quietLog(), Passes: rec}, control: &fakeActor{result: tc.result, err: tc.err}}
			_, _ = r.act(context.Background(), c, observed(c), plan.Decision{Action: &remove, Progress: tc.progress})
			if !slices.Equal(rec.calls, tc.want) {
				t.Errorf("recorded %q, want %q", rec.calls, tc.want)
			}
		})
	}
}

// A pass that ends without error is recorded with the pass's time; a cluster gone has its
// records dropped, and its last pass is not recorded as a success.
func TestSyncRecordsPasses(t *testing.T) {
	c := newCluster(3)
	f := newFixture(t, c, member.PeerService(c), member.ClientService(c))
	rec := &fakeRecorder{}
	f.with(func(d *Deps) { d.Passes = rec })
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f.r.now = func() time.Time { return now }
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	_ = f.cinf.Etcd().V1alpha1().EtcdClusters().Informer().GetIndexer().Delete(c)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); !errors.Is(err, ErrGone) {
		t.Fatalf("Sync of a deleted cluster: %v, want ErrGone", err)
	}
	want := []string{"action ns/demo CreatePod", "pass ns/demo 2030-01-02T03:04:05Z", "forget ns/demo"}
	if !slices.Equal(rec.calls, want) {
		t.Errorf("recorded %q, want %q", rec.calls, want)
	}
}
