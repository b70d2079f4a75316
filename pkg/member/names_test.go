package member

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// at is a cluster without TLS of the given name in the given namespace.
func at(cluster, namespace string) *api.EtcdCluster {
	return &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: namespace}}
}

// A member's ordinal comes from its name and its peer URL's host, in either form the
// operator builds; scheme and port do not count, another cluster's or namespace's host does.
func TestMemberOrdinal(t *testing.T) {
	const cluster, ns = "demo", "ns"
	for _, tc := range []struct {
		name    string
		member  string
		peerURL string
		want    int
		ok      bool
	}{
		{"member Service URL", "demo-1", PeerURL(at(cluster, ns), 1), 1, true},
		{"headless URL of an older member", "demo-1", HeadlessPeerURL(at(cluster, ns), 1), 1, true},
		{"unstarted learner: the host says", "", PeerURL(at(cluster, ns), 3), 3, true},
		{"unstarted learner on the headless name", "", HeadlessPeerURL(at(cluster, ns), 3), 3, true},
		{"https member Service URL", "demo-1", "https://demo-1.ns.svc:2380", 1, true},
		{"https headless URL", "demo-2", "https://demo-2.demo.ns.svc:2380", 2, true},
		{"https unstarted learner", "", "https://demo-4.ns.svc:2380", 4, true},
		{"another port", "demo-1", "https://demo-1.ns.svc:12380", 1, true},
		{"no port", "demo-1", "https://demo-1.ns.svc", 1, true},
		{"ordinal ten", "demo-10", "https://demo-10.demo.ns.svc:2380", 10, true},
		{"name and host disagree", "demo-1", "https://demo-2.ns.svc:2380", 0, false},
		{"name of another cluster", "other-1", PeerURL(at(cluster, ns), 1), 0, false},
		{"name that is no ordinal", "demo", PeerURL(at(cluster, ns), 1), 0, false},
		{"another namespace", "demo-1", "https://demo-1.other.svc:2380", 0, false},
		{"another namespace, unstarted", "", PeerURL(at(cluster, "other"), 1), 0, false},
		{"another namespace, headless form", "demo-1", HeadlessPeerURL(at(cluster, "other"), 1), 0, false},
		{"headless form of another cluster's Service", "demo-1", "http://demo-1.other.ns.svc:2380", 0, false},
		{"another cluster's host", "", PeerURL(at("other", ns), 1), 0, false},
		{"cluster-local suffix the operator never builds", "demo-1", "https://demo-1.ns.svc.cluster.local:2380", 0, false},
		{"pod IP", "demo-1", "http://10.0.0.1:2380", 0, false},
		{"no scheme", "demo-1", "demo-1.ns.svc:2380", 0, false},
		{"leading zero", "", "https://demo-01.ns.svc:2380", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := etcdutil.Member{ID: 1, Name: tc.member, PeerURLs: []string{tc.peerURL}}
			got, ok := MemberOrdinal(cluster, ns, m)
			if got != tc.want || ok != tc.ok {
				t.Errorf("MemberOrdinal(%q, %q) = %d, %v; want %d, %v", tc.member, tc.peerURL, got, ok, tc.want, tc.ok)
			}
		})
	}
	for _, urls := range [][]string{nil, {PeerURL(at(cluster, ns), 1), "https://demo-1.ns.svc:2380"}} {
		if _, ok := MemberOrdinal(cluster, ns, etcdutil.Member{Name: "demo-1", PeerURLs: urls}); ok {
			t.Errorf("MemberOrdinal of a member with peer URLs %q is ok; the operator sets exactly one", urls)
		}
	}
}
