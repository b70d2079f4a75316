package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// ErrUnreachable: no member of the cluster could be asked anything.
var ErrUnreachable = errors.New("no member answers")

// memberView is one member as a command sees it: etcd's entry, its pod, and what it said of
// itself through its pod's forward.
type memberView struct {
	// Name is the member's name, which is its pod's.
	Name string
	// Member is etcd's entry; nil for a pod that is no member (yet).
	Member *etcdutil.Member
	// Pod is nil for a member whose pod is gone.
	Pod *corev1.Pod
	// Endpoint is the member's client URL through its forward; empty when not reached.
	Endpoint string
	// Status is what the member said of itself; nil when it did not answer, and Err says why.
	Status *etcdutil.Status
	Err    error
}

// voter is a voting member of etcd's list.
func (v *memberView) voter() bool { return v.Member != nil && !v.Member.IsLearner }

// session is one command's connection to a cluster's members.
type session struct {
	cluster *api.EtcdCluster
	// members by ordinal: etcd's members, and pods that are not members.
	members []*memberView
	// client balances over every member reached.
	client etcdutil.Maintainer
	// listErr is why etcd's member list could not be read (no leader, say); members then
	// holds only the pods.
	listErr error
}

// connect reaches every running member pod of the cluster through a forward of its client
// port, asks each for its status and one of them for the member list. It fails with
// ErrUnreachable when no member answers at all, and returns the session of the pods then
// (without a client), for a command that describes them; what a member or the list did not
// answer otherwise is in the session.
func connect(ctx context.Context, env *Env, c *api.EtcdCluster) (*session, error) {
	pods, err := memberPods(ctx, env, c)
	if err != nil {
		return nil, err
	}
	conn, err := clientConn(ctx, env, c)
	if err != nil {
		// Nothing can be asked without the certificate: the pods are all there is to show.
		return podsOnly(c, pods, err)
	}
	views := forwardAll(ctx, env, c, pods)
	endpoints := reachedEndpoints(views)
	if len(endpoints) == 0 {
		return unreachable(c, views)
	}
	cli, err := etcdutil.NewMaintainer(env.dialTimeout(), env.callTimeout(), endpoints, conn)
	if err != nil {
		return nil, err
	}
	s := &session{cluster: c, client: cli}
	askStatuses(ctx, cli, views)
	if !slices.ContainsFunc(views, func(v *memberView) bool { return v.Status != nil }) {
		_ = cli.Close()
		return unreachable(c, views)
	}
	list, err := cli.MemberList(ctx)
	if err != nil {
		s.listErr = err
		s.members = views
		return s, nil
	}
	s.members = merge(c, list, views)
	return s, nil
}

// podsOnly is the session of a cluster whose client certificate could not be read (connErr):
// only its pods, with why each that is not serving is not, so a command can still describe them.
func podsOnly(c *api.EtcdCluster, pods []*corev1.Pod, connErr error) (*session, error) {
	s := &session{cluster: c, listErr: fmt.Errorf("%w: %v", ErrUnreachable, connErr)}
	for _, p := range pods {
		s.members = append(s.members, &memberView{Name: p.Name, Pod: p, Err: notServing(p)})
	}
	return s, fmt.Errorf("etcdcluster %s: %w: %v", c.Name, ErrUnreachable, connErr)
}

// forwardAll opens a forward to each serving pod's client port, all at once so that one slow
// pod does not delay the others; a view's Endpoint is set when its forward opened, else Err.
func forwardAll(ctx context.Context, env *Env, c *api.EtcdCluster, pods []*corev1.Pod) []*memberView {
	views := make([]*memberView, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		views[i] = &memberView{Name: p.Name, Pod: p}
		if views[i].Err = notServing(p); views[i].Err != nil {
			continue
		}
		wg.Add(1)
		go func(v *memberView) {
			defer wg.Done()
			addr, err := env.Forwarder.Forward(ctx, v.Pod, member.ClientPort)
			if err != nil {
				v.Err = err
				return
			}
			v.Endpoint = clientScheme(c) + "://" + addr
		}(views[i])
	}
	wg.Wait()
	return views
}

// reachedEndpoints are the client URLs of the views whose forward opened, for the client to
// balance over.
func reachedEndpoints(views []*memberView) []string {
	var endpoints []string
	for _, v := range views {
		if v.Endpoint != "" {
			endpoints = append(endpoints, v.Endpoint)
		}
	}
	return endpoints
}

// askStatuses asks every reached member for its status, all at once so that one member that
// does not answer costs one call timeout, not one per member; each view gets Status or Err.
func askStatuses(ctx context.Context, cli etcdutil.Maintainer, views []*memberView) {
	var wg sync.WaitGroup
	for _, v := range views {
		if v.Endpoint == "" {
			continue
		}
		wg.Add(1)
		go func(v *memberView) {
			defer wg.Done()
			st, err := cli.Status(ctx, v.Endpoint)
			if err != nil {
				v.Err = fmt.Errorf("etcd in pod %s does not answer: %w", v.Name, err)
				return
			}
			v.Status = &st
		}(v)
	}
	wg.Wait()
}

// open connects to the cluster name, for a command that needs etcd's member list.
func open(ctx context.Context, env *Env, name string) (*session, error) {
	c, err := getCluster(ctx, env, name)
	if err != nil {
		return nil, err
	}
	s, err := connect(ctx, env, c)
	if err != nil {
		return nil, err
	}
	if err := s.needList(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// unreachable is the session of a cluster none of whose members answers: its pods, each with
// why, and no client; and its error, which names each pod's reason.
func unreachable(c *api.EtcdCluster, views []*memberView) (*session, error) {
	s := &session{cluster: c, members: views, listErr: ErrUnreachable}
	if len(views) == 0 {
		return s, fmt.Errorf("etcdcluster %s: %w: it has no member pod", c.Name, ErrUnreachable)
	}
	var why []string
	for _, v := range views {
		why = append(why, v.Err.Error())
	}
	return s, fmt.Errorf("etcdcluster %s: %w: %s", c.Name, ErrUnreachable, strings.Join(why, "; "))
}

// merge puts etcd's members and the pods' views together. A pod is the member that answered
// through it (the ID of its status); a pod that did not answer is the member of its name, or,
// for a member not started yet (no name), of its peer URL's ordinal.
func merge(c *api.EtcdCluster, list []etcdutil.Member, views []*memberView) []*memberView {
	var out []*memberView
	taken := map[*memberView]bool{}
	for i := range list {
		m := &list[i]
		v := findView(c, m, views, taken)
		if v == nil {
			name := m.Name
			if ord, ok := member.MemberOrdinal(c.Name, c.Namespace, *m); ok && name == "" {
				name = member.Name(c.Name, ord)
			}
			v = &memberView{Name: name, Err: errors.New("no pod")}
		}
		taken[v] = true
		v.Member = m
		out = append(out, v)
	}
	for _, v := range views {
		if !taken[v] {
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b *memberView) int { return byOrdinal(c.Name, a.Name, b.Name) })
	return out
}

func findView(c *api.EtcdCluster, m *etcdutil.Member, views []*memberView, taken map[*memberView]bool) *memberView {
	for _, v := range views {
		if !taken[v] && v.Status != nil && v.Status.ID == m.ID {
			return v
		}
	}
	for _, v := range views {
		if taken[v] || v.Status != nil {
			continue
		}
		if m.Name != "" && m.Name == v.Name {
			return v
		}
		if ord, ok := member.MemberOrdinal(c.Name, c.Namespace, *m); ok && m.Name == "" && member.Name(c.Name, ord) == v.Name {
			return v
		}
	}
	return nil
}

// leaderID is the leader the members that answered follow: the one most of them name (0: none).
func (s *session) leaderID() uint64 {
	votes := map[uint64]int{}
	var best uint64
	for _, v := range s.members {
		if v.Status == nil || v.Status.Leader == 0 {
			continue
		}
		votes[v.Status.Leader]++
		if votes[v.Status.Leader] > votes[best] {
			best = v.Status.Leader
		}
	}
	return best
}

// role is the member's part in raft: leader, follower or learner; "-" for a pod that is no
// member.
func (s *session) role(v *memberView) string {
	switch {
	case v.Member == nil:
		return "-"
	case v.Member.IsLearner:
		return "learner"
	case v.Member.ID == s.leaderID():
		return "leader"
	}
	return "follower"
}

// needList is the error of a command that cannot go on without etcd's member list, when it
// could not be read; nil when it was.
func (s *session) needList() error {
	if s.listErr != nil {
		return fmt.Errorf("etcdcluster %s: listing its members: %w", s.cluster.Name, s.listErr)
	}
	return nil
}

func (s *session) close() {
	if s.client != nil {
		_ = s.client.Close()
	}
}

func clientScheme(c *api.EtcdCluster) string {
	if member.ClientTLS(c) {
		return "https"
	}
	return "http"
}

func (env *Env) dialTimeout() time.Duration {
	if env.DialTimeout > 0 {
		return env.DialTimeout
	}
	return defaultDialTimeout
}

func (env *Env) callTimeout() time.Duration {
	if env.CallTimeout > 0 {
		return env.CallTimeout
	}
	return defaultCallTimeout
}
