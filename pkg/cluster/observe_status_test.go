package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// slowEtcdClient answers a status request after delay (or when the caller gives up first),
// and refuses the endpoints in refused at once, as a member whose etcd is down does.
type slowEtcdClient struct {
	fakeEtcdClient
	delay   time.Duration
	refused map[string]bool
}

func (c slowEtcdClient) Status(ctx context.Context, endpoint string) (etcdutil.Status, error) {
	if c.refused[endpoint] {
		return etcdutil.Status{}, errors.New("connection refused")
	}
	select {
	case <-time.After(c.delay):
		return etcdutil.Status{ID: 1, Leader: 1}, nil
	case <-ctx.Done():
		return etcdutil.Status{}, ctx.Err()
	}
}

// Members that all answer, but later than statusTimeout (a node or an operator short of CPU),
// are asked again before the pass counts them as not answering: a cluster whose members all
// answer is never taken for one that lost its quorum. Members that answer in time, those that
// refuse, and one slow member among members that refuse, are asked once.
func TestMemberStatusesAskSlowMembersAgain(t *testing.T) {
	endpoints := map[int]string{0: "http://a:2379", 1: "http://b:2379", 2: "http://c:2379"}
	log := logrus.NewEntry(logrus.New())
	for _, tc := range []struct {
		name    string
		delay   time.Duration
		refused []string
		want    int
	}{
		{"every member slower than the first second", statusTimeout + statusTimeout/2, nil, 3},
		{"in time", 0, nil, 3},
		{"one refuses, two slow: asked again", statusTimeout + statusTimeout/2, []string{"http://a:2379"}, 2},
		{"two refuse, one slow (a learner not serving yet): not asked again", statusTimeout + statusTimeout/2, []string{"http://a:2379", "http://b:2379"}, 0},
		{"slower than the second request too", statusRetryTimeout + statusTimeout, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			refused := map[string]bool{}
			for _, ep := range tc.refused {
				refused[ep] = true
			}
			cli := slowEtcdClient{fakeEtcdClient: fakeEtcdClient{f: &fakeEtcd{t: t}}, delay: tc.delay, refused: refused}
			if got := memberStatuses(context.Background(), cli, endpoints, log); len(got) != tc.want {
				t.Errorf("%d members answered, want %d", len(got), tc.want)
			}
		})
	}
}
