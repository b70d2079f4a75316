package cluster

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// A member's ordinal, as a pass sees it, comes from its name and its peer URL's host: the
// scheme and the port of the URL, http today and https once members serve TLS, change none.
// A member whose name and host disagree, or whose host the operator does not build for the
// cluster and its namespace, is foreign (-1), as before.
func TestMemberViewOrdinal(t *testing.T) {
	c := newCluster(3)
	o := &observation{cluster: c, statuses: map[int]etcdutil.Status{}}
	for _, tc := range []struct {
		name    string
		member  string
		peerURL string
		want    int
	}{
		{"http member Service URL", "demo-1", member.PeerURL(c, 1), 1},
		{"http headless URL of an older member", "demo-2", member.HeadlessPeerURL(c, 2), 2},
		{"http unstarted learner", "", member.PeerURL(c, 3), 3},
		{"https member Service URL", "demo-1", "https://demo-1.ns.svc:2380", 1},
		{"https headless URL", "demo-2", "https://demo-2.demo.ns.svc:2380", 2},
		{"https unstarted learner", "", "https://demo-3.ns.svc:2380", 3},
		{"https unstarted learner on the headless name", "", "https://demo-3.demo.ns.svc:2380", 3},
		{"https on another port", "demo-0", "https://demo-0.ns.svc:12380", 0},
		{"name and host disagree", "demo-1", "https://demo-2.ns.svc:2380", -1},
		{"name and host disagree over http", "demo-1", member.PeerURL(c, 2), -1},
		{"another namespace", "demo-1", "https://demo-1.other.svc:2380", -1},
		{"another namespace over http", "", "http://demo-1.other.svc:2380", -1},
		{"another namespace, headless form", "demo-1", "https://demo-1.demo.other.svc:2380", -1},
		{"a pod IP", "demo-1", "https://10.0.0.2:2380", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := etcdutil.Member{ID: 7, Name: tc.member, PeerURLs: []string{tc.peerURL}}
			if got := o.memberView(m).Ordinal; got != tc.want {
				t.Errorf("ordinal of %q at %s = %d, want %d", tc.member, tc.peerURL, got, tc.want)
			}
		})
	}
}

// httpsObservation is a pass over a healthy cluster of three whose members' peer URLs are
// https: members 0 (leading) and 1 on their member Services, member 2, added by an older
// operator, on the headless name. Each pod is running, ready and published, at pod IP
// 10.0.0.<ordinal+1>, and its member answers.
func httpsObservation() *observation {
	c := newCluster(3)
	c.Status.Size, c.Status.CurrentVersion = 3, c.Spec.Version
	o := &observation{cluster: c, pods: map[int]*corev1.Pod{}, published: map[string]bool{},
		statuses: map[int]etcdutil.Status{}, leader: 100, membersKnown: true, initImage: "x"}
	peerURLs := []string{"https://demo-0.ns.svc:2380", "https://demo-1.ns.svc:2380", "https://demo-2.demo.ns.svc:2380"}
	for ord := range 3 {
		t := member.Template{Ordinal: ord, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: firstOrdinals(ord + 1)}
		if ord == 0 {
			t.ClusterState = etcdutil.ClusterStateNew
		}
		p := member.Pod(c, t, o.initImage)
		p.Status.Phase, p.Status.PodIP = corev1.PodRunning, fmt.Sprintf("10.0.0.%d", ord+1)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		o.pods[ord] = p
		o.published[p.Name] = true
		id := uint64(100 + ord)
		o.statuses[ord] = etcdutil.Status{ID: id, Leader: 100, Version: c.Spec.Version, RaftTerm: 2}
		o.members = append(o.members, etcdutil.Member{ID: id, Name: member.Name(c.Name, ord),
			PeerURLs: []string{peerURLs[ord]}, ClientURLs: []string{member.PodClientURL(p.Status.PodIP, member.ClientTLS(c))}})
	}
	return o
}

// Members whose peer URLs are https keep their ordinals in the planner's State, each healthy
// and the leader marked, and the planner decides nothing for the healthy full cluster: no
// member is taken for foreign, none is added, removed or replaced.
func TestPlanHTTPSMembersInSpec(t *testing.T) {
	s := httpsObservation().state(time.Now())
	if len(s.Members) != 3 {
		t.Fatalf("members = %+v, want 3", s.Members)
	}
	for i, m := range s.Members {
		if m.Ordinal != i || m.ID != uint64(100+i) || !m.Healthy || m.Learner || m.Leader != (i == 0) {
			t.Errorf("member %d viewed as %+v, want ordinal %d, healthy, voting, leading only if 0", i, m, i)
		}
	}
	d := plan.Plan(s)
	if d.Action != nil || d.Progress != "" || d.Blocked != "" {
		t.Errorf("decision for a healthy full cluster on https = %+v, want none", d)
	}
}

// firstOrdinals is 0, 1, ..., n-1: the initial cluster of a member that joined n-1 others.
func firstOrdinals(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
