package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// answeringEtcd is an etcd whose every membership call answers err; it records the calls and
// the endpoints each client was opened with.
type answeringEtcd struct {
	err error
	// status, when set, is what Status answers (without err).
	status    *etcdutil.Status
	calls     []string
	endpoints [][]string
}

func (e *answeringEtcd) New(endpoints []string, _ etcdutil.ConnConfig) (etcdutil.Client, error) {
	e.endpoints = append(e.endpoints, endpoints)
	return answeringClient{e}, nil
}

type answeringClient struct{ e *answeringEtcd }

var _ etcdutil.Client = answeringClient{}

func (c answeringClient) call(name string) error {
	c.e.calls = append(c.e.calls, name)
	return c.e.err
}
func (c answeringClient) MemberList(context.Context) ([]etcdutil.Member, error) {
	return nil, c.call("MemberList")
}
func (c answeringClient) MemberAddAsLearner(context.Context, string) (etcdutil.Member, error) {
	return etcdutil.Member{ID: 0xabc}, c.call("MemberAddAsLearner")
}
func (c answeringClient) MemberPromote(context.Context, uint64) error { return c.call("MemberPromote") }
func (c answeringClient) MemberRemove(context.Context, uint64) error  { return c.call("MemberRemove") }
func (c answeringClient) MemberUpdate(context.Context, uint64, []string) error {
	return c.call("MemberUpdate")
}
func (c answeringClient) MoveLeader(context.Context, string, uint64) error {
	return c.call("MoveLeader")
}
func (c answeringClient) Status(context.Context, string) (etcdutil.Status, error) {
	err := c.call("Status")
	if c.e.status != nil {
		return *c.e.status, nil
	}
	return etcdutil.Status{}, err
}
func (c answeringClient) AlarmList(context.Context) ([]etcdutil.Alarm, error) {
	return nil, c.call("AlarmList")
}
func (c answeringClient) DowngradeValidate(context.Context, string) error {
	return c.call("DowngradeValidate")
}
func (c answeringClient) DowngradeEnable(context.Context, string) error {
	return c.call("DowngradeEnable")
}
func (c answeringClient) DowngradeCancel(context.Context) error { return c.call("DowngradeCancel") }
func (c answeringClient) Close() error                          { return nil }

// etcdAnswer wraps a sentinel the way etcdutil returns etcd's errors: wrapped, with etcd's
// own message.
func etcdAnswer(sentinel error) error { return fmt.Errorf("etcdserver: %w", sentinel) }

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return logrus.NewEntry(l)
}

func newControl(etcd etcdutil.Factory, kube *kubefake.Clientset) (*realActor, *record.FakeRecorder) {
	rec := record.NewFakeRecorder(10)
	return &realActor{kube: kube, clients: newEtcdClients(etcd, conns{kube: kube}, nil), recorder: rec, log: quietLog(), initImage: "op:test"}, rec
}

// TestMembershipAnswers: what each membership change makes of each answer of etcd's. A change
// already made is done (no Event, no retry), a change refused for now is retried after a
// while, anything else is a failure; an Event only when this call changed the cluster.
func TestMembershipAnswers(t *testing.T) {
	c := newCluster(3)
	voters := []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}
	changes := map[string]func(m *realActor) (Result, error){
		"add learner": func(m *realActor) (Result, error) {
			return m.AddLearner(context.Background(), c, voters, 2, member.PeerURL(c, 2))
		},
		"promote": func(m *realActor) (Result, error) {
			return m.Promote(context.Background(), c, voters, 2, 0xabc)
		},
		"remove": func(m *realActor) (Result, error) {
			return m.RemoveMember(context.Background(), c, voters, 2, 0xabc, "scaling down")
		},
		"move leader": func(m *realActor) (Result, error) {
			return m.MoveLeader(context.Background(), c, voters[0], 2, 0xdef)
		},
		"move peer URL": func(m *realActor) (Result, error) {
			return m.MovePeerURL(context.Background(), c, voters, 2, 0xabc, "https://demo-2.ns.svc:2382", "moving the peers onto TLS")
		},
	}
	type want struct {
		changed bool
		retryIn time.Duration
		failed  bool
	}
	changed, done, failed := want{changed: true}, want{}, want{failed: true}
	for _, tc := range []struct {
		change string
		answer error
		want   want
	}{
		{"add learner", nil, changed},
		{"add learner", etcdAnswer(etcdutil.ErrPeerURLExists), done},
		{"add learner", etcdAnswer(etcdutil.ErrUnhealthy), want{retryIn: etcdRefusedRetry}},
		{"add learner", etcdAnswer(etcdutil.ErrTooManyLearners), failed},
		{"add learner", etcdAnswer(etcdutil.ErrNotLeader), failed},
		{"add learner", errors.New("context deadline exceeded"), failed},

		{"promote", nil, changed},
		{"promote", etcdAnswer(etcdutil.ErrMemberNotFound), done},
		{"promote", etcdAnswer(etcdutil.ErrMemberNotLearner), done},
		{"promote", etcdAnswer(etcdutil.ErrLearnerNotReady), want{retryIn: whileWaiting}},
		{"promote", etcdAnswer(etcdutil.ErrUnhealthy), want{retryIn: whileWaiting}},
		{"promote", etcdAnswer(etcdutil.ErrPeerURLExists), failed},

		{"remove", nil, changed},
		{"remove", etcdAnswer(etcdutil.ErrMemberNotFound), done},
		{"remove", etcdAnswer(etcdutil.ErrUnhealthy), want{retryIn: etcdRefusedRetry}},
		{"remove", etcdAnswer(etcdutil.ErrMemberNotLearner), failed},
		{"remove", errors.New("connection refused"), failed},

		{"move peer URL", nil, changed},
		{"move peer URL", etcdAnswer(etcdutil.ErrMemberNotFound), done},
		{"move peer URL", etcdAnswer(etcdutil.ErrUnhealthy), want{retryIn: etcdRefusedRetry}},
		{"move peer URL", etcdAnswer(etcdutil.ErrPeerURLExists), failed},
		{"move peer URL", errors.New("context deadline exceeded"), failed},

		{"move leader", nil, changed},
		{"move leader", etcdAnswer(etcdutil.ErrNotLeader), want{retryIn: afterAction}},
		{"move leader", etcdAnswer(etcdutil.ErrMemberNotFound), failed},
		{"move leader", errors.New("context deadline exceeded"), failed},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.change, tc.answer), func(t *testing.T) {
			etcd := &answeringEtcd{err: tc.answer}
			m, rec := newControl(etcd, kubefake.NewClientset())
			res, err := changes[tc.change](m)
			if (err != nil) != tc.want.failed {
				t.Fatalf("error = %v, want failure %v", err, tc.want.failed)
			}
			if err != nil && !errors.Is(err, tc.answer) {
				t.Errorf("error %v does not carry etcd's answer %v", err, tc.answer)
			}
			if res.Changed != tc.want.changed || res.RetryIn != tc.want.retryIn {
				t.Errorf("result = %+v, want changed %v, retry in %v", res, tc.want.changed, tc.want.retryIn)
			}
			if (res.RetryIn > 0) != (res.Refused != nil) {
				t.Errorf("result = %+v: a retry names etcd's refusal, and only a retry", res)
			}
			if events := len(rec.Events); (events == 1) != tc.want.changed || events > 1 {
				t.Errorf("%d Events, want one exactly when the cluster changed", events)
			}
			if len(etcd.calls) != 1 {
				t.Errorf("etcd calls %v, want exactly one", etcd.calls)
			}
		})
	}
}

// TestDowngradeAnswers: what enabling (validate, then enable) and cancelling etcd's downgrade
// make of etcd's answers. A downgrade etcd refuses is retried later with a Warning, unless a
// member reports it enabled already: an earlier pass enabled it, and etcd, having lowered
// the cluster version, calls the same target invalid.
func TestDowngradeAnswers(t *testing.T) {
	c := newCluster(3)
	voters := []string{"http://10.0.0.1:2379"}
	invalid := etcdAnswer(etcdutil.ErrDowngradeInvalid)
	for _, tc := range []struct {
		name    string
		target  string
		answer  error
		status  *etcdutil.Status
		changed bool
		retryIn time.Duration
		failed  bool
		calls   string
		event   string
	}{
		{name: "enabled", target: "3.6.16", changed: true,
			calls: "[DowngradeValidate DowngradeEnable]", event: "DowngradeEnabled"},
		{name: "cancelled", changed: true, calls: "[DowngradeCancel]", event: "DowngradeCancelled"},
		{name: "refused", target: "3.6.16", answer: invalid, retryIn: downgradeRefusedRetry,
			calls: "[DowngradeValidate Status]", event: "DowngradeRefused"},
		{name: "enabled already", target: "3.6.16", answer: invalid, status: &etcdutil.Status{DowngradeTarget: "3.6.0"},
			calls: "[DowngradeValidate Status]"},
		{name: "unreachable", target: "3.6.16", answer: errors.New("context deadline exceeded"), failed: true,
			calls: "[DowngradeValidate]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			etcd := &answeringEtcd{err: tc.answer, status: tc.status}
			m, rec := newControl(etcd, kubefake.NewClientset())
			res, err := m.Downgrade(context.Background(), c, voters, tc.target)
			if (err != nil) != tc.failed || res.Changed != tc.changed || res.RetryIn != tc.retryIn {
				t.Errorf("result %+v, error %v; want changed %v, retry in %v, failed %v", res, err, tc.changed, tc.retryIn, tc.failed)
			}
			if got := fmt.Sprint(etcd.calls); got != tc.calls {
				t.Errorf("etcd calls %s, want %s", got, tc.calls)
			}
			var events []string
			for len(rec.Events) > 0 {
				events = append(events, <-rec.Events)
			}
			if (tc.event == "") != (len(events) == 0) || len(events) > 1 || (tc.event != "" && !strings.Contains(events[0], tc.event)) {
				t.Errorf("events %q, want one %q", events, tc.event)
			}
		})
	}
}

// A membership change goes to the voting members given (the leader first), a leadership
// transfer to the leader alone; with no voter there is nobody to ask.
func TestMembershipEndpoints(t *testing.T) {
	c := newCluster(3)
	etcd := &answeringEtcd{}
	m, _ := newControl(etcd, kubefake.NewClientset())
	voters := []string{"http://10.0.0.2:2379", "http://10.0.0.1:2379"}
	if _, err := m.RemoveMember(context.Background(), c, voters, 2, 1, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.MoveLeader(context.Background(), c, "http://10.0.0.3:2379", 2, 1); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(etcd.endpoints); got != "[[http://10.0.0.2:2379 http://10.0.0.1:2379] [http://10.0.0.3:2379]]" {
		t.Errorf("clients opened over %s", got)
	}
	if _, err := m.Promote(context.Background(), c, nil, 1, 1); err == nil || !strings.Contains(err.Error(), "no voting member") {
		t.Errorf("promote with no voter: %v", err)
	}
}

// Pod writes: a pod that exists already is done; a delete of a pod that is gone, or was
// replaced by a newer pod of the same name (UID precondition), is done too.
func TestPodWrites(t *testing.T) {
	c := newCluster(3)
	kube := kubefake.NewClientset()
	m, rec := newControl(&answeringEtcd{}, kube)
	tmpl := member.Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}}
	for i, wantChanged := range []bool{true, false} {
		res, err := m.CreatePod(context.Background(), c, tmpl, "scaling up")
		if err != nil || res.Changed != wantChanged {
			t.Errorf("create #%d = %+v, %v; want changed %v", i+1, res, err, wantChanged)
		}
	}
	pod, err := kube.CoreV1().Pods(c.Namespace).Get(context.Background(), "demo-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.InitContainers[0].Image != "op:test" {
		t.Errorf("joining pod copies member-init from %s, want the operator's image", pod.Spec.InitContainers[0].Image)
	}
	stale := pod.DeepCopy()
	stale.UID = "an-older-pod"
	kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if uid := a.(k8stesting.DeleteAction).GetDeleteOptions().Preconditions.UID; uid != nil && *uid == stale.UID {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name, errors.New("UID mismatch"))
		}
		return false, nil, nil
	})
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		changed bool
	}{{"a newer pod of the same name", stale, false}, {"the pod", pod, true}, {"a pod already gone", pod, false}} {
		res, err := m.DeletePod(context.Background(), c, tc.pod, "x")
		if err != nil || res.Changed != tc.changed {
			t.Errorf("delete %s = %+v, %v; want changed %v", tc.name, res, err, tc.changed)
		}
	}
	if n := len(rec.Events); n != 2 {
		t.Errorf("%d Events, want 2 (one create, one delete)", n)
	}
}

// Against real etcd: each change made twice is done the second time, a learner that has not
// started cannot be promoted yet, and a transfer asked of a member that no longer leads is
// planned again.
func TestMembershipAgainstEtcd(t *testing.T) {
	t.Parallel()
	c := newCluster(3)
	c.Name, c.Namespace = "m", "ns"
	members := etcdtest.StartCluster(t, 2)
	eps := etcdtest.ClientURLs(members...)
	m, _ := newControl(etcdutil.NewFactory(0, 0), kubefake.NewClientset())
	ctx := context.Background()

	// etcd refuses a change until its members have been connected for a few seconds: retry
	// as a pass would, after RetryIn.
	retried := func(change func() (Result, error)) (Result, error) {
		deadline := time.Now().Add(etcdtest.ReadyTimeout)
		for {
			res, err := change()
			if err != nil || res.RetryIn == 0 || time.Now().After(deadline) {
				return res, err
			}
			time.Sleep(res.RetryIn)
		}
	}
	var addedID uint64
	for i, want := range []bool{true, false} {
		res, err := retried(func() (Result, error) { return m.AddLearner(ctx, c, eps, 2, member.PeerURL(c, 2)) })
		if err != nil || res.Changed != want {
			t.Fatalf("add learner #%d = %+v, %v; want changed %v", i+1, res, err, want)
		}
		if want {
			addedID = res.MemberID
		}
	}
	cli, err := etcdutil.NewFactory(0, 0).New(eps, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var learner uint64
	for _, mem := range list {
		if mem.IsLearner && mem.PeerURLs[0] == member.PeerURL(c, 2) {
			learner = mem.ID
		}
	}
	if learner == 0 {
		t.Fatalf("no learner with the member's peer URL in %+v", list)
	}
	if addedID != learner {
		t.Errorf("AddLearner gave member ID %x, etcd lists the learner as %x", addedID, learner)
	}
	res, err := m.Promote(ctx, c, eps, 2, learner)
	if err != nil || res.Changed || res.RetryIn != whileWaiting {
		t.Errorf("promote a learner that never started = %+v, %v; want a retry", res, err)
	}
	for i, want := range []bool{true, false} {
		res, err := retried(func() (Result, error) { return m.RemoveMember(ctx, c, eps, 2, learner, "x") })
		if err != nil || res.Changed != want {
			t.Errorf("remove #%d = %+v, %v; want changed %v", i+1, res, err, want)
		}
	}

	var leader, follower *etcdtest.Member
	for _, mem := range members {
		st, err := cli.Status(ctx, mem.ClientURL)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader == st.ID {
			leader = mem
		} else {
			follower = mem
		}
	}
	if leader == nil || follower == nil {
		t.Fatal("no leader and follower among the members")
	}
	res, err = m.MoveLeader(ctx, c, leader.ClientURL, 0, follower.ID())
	if err != nil || !res.Changed {
		t.Fatalf("move leader = %+v, %v", res, err)
	}
	res, err = m.MoveLeader(ctx, c, leader.ClientURL, 0, follower.ID())
	if err != nil || res.Changed || res.RetryIn != afterAction {
		t.Errorf("move leader from a member that no longer leads = %+v, %v; want to plan again", res, err)
	}
}
