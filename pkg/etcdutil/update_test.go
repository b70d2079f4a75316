package etcdutil_test

import (
	"context"
	"errors"
	"maps"
	"net/url"
	"slices"
	"testing"

	"go.etcd.io/etcd/server/v3/embed"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// demo is the cluster whose members the embedded ones pose as: without TLS, as a test
// member serves.
var demo = &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"}}

// asMember makes an embedded member look like the operator's member 0 of the cluster demo in
// namespace ns: named demo-0 and advertising its member Service URL. It listens where
// etcdtest put it; nobody dials the advertised URL in a cluster of one.
func asMember(t *testing.T) func(*embed.Config) {
	peerURL := member.PeerURL(demo, 0)
	u, err := url.Parse(peerURL)
	if err != nil {
		t.Fatalf("parsing %s: %v", peerURL, err)
	}
	return func(cfg *embed.Config) {
		cfg.Name = member.Name("demo", 0)
		cfg.AdvertisePeerUrls = []url.URL{*u}
		cfg.InitialCluster = cfg.Name + "=" + peerURL
	}
}

// TestMemberUpdateKeepsIdentity: the operator moves its members' peer URLs from http to
// https (and a member added on the headless name keeps that name): etcd keeps each member's
// ID, and each member keeps its ordinal, the started one by its name and host, the learner
// that has not started by its host.
func TestMemberUpdateKeepsIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := etcdtest.StartClusterWith(t, 1, asMember(t))[0]
	cli := newClient(t, seed.ClientURL)
	learner, err := cli.MemberAddAsLearner(ctx, member.HeadlessPeerURL(demo, 1))
	if err != nil {
		t.Fatalf("MemberAddAsLearner: %v", err)
	}
	before := ordinals(t, cli)
	if want := map[uint64]int{seed.ID(): 0, learner.ID: 1}; !maps.Equal(before, want) {
		t.Fatalf("ordinals on http = %v, want %v", before, want)
	}

	moved := map[uint64]string{seed.ID(): "https://demo-0.ns.svc:2380", learner.ID: "https://demo-1.demo.ns.svc:2380"}
	for id, u := range moved {
		if err := cli.MemberUpdate(ctx, id, []string{u}); err != nil {
			t.Fatalf("MemberUpdate(%x, %s): %v", id, u, err)
		}
	}
	members, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatalf("MemberList: %v", err)
	}
	for _, m := range members {
		if !slices.Equal(m.PeerURLs, []string{moved[m.ID]}) {
			t.Errorf("member %x lists peer URLs %q, want %s", m.ID, m.PeerURLs, moved[m.ID])
		}
		wantName := "" // the learner has not started
		if m.ID == seed.ID() {
			wantName = "demo-0"
		}
		if m.Name != wantName {
			t.Errorf("member %x listed with name %q, want %q", m.ID, m.Name, wantName)
		}
	}
	if after := ordinals(t, cli); !maps.Equal(after, before) {
		t.Errorf("ordinals on https = %v, want those on http %v", after, before)
	}

	if err := cli.MemberUpdate(ctx, 0x1234, []string{"https://demo-2.ns.svc:2380"}); !errors.Is(err, etcdutil.ErrMemberNotFound) {
		t.Errorf("updating an unknown member = %v, want ErrMemberNotFound", err)
	}
	if err := cli.MemberUpdate(ctx, learner.ID, []string{moved[seed.ID()]}); !errors.Is(err, etcdutil.ErrPeerURLExists) {
		t.Errorf("updating to another member's peer URL = %v, want ErrPeerURLExists", err)
	}
}

// ordinals lists the members and derives each one's ordinal as the operator does; a member
// it does not recognize fails the test.
func ordinals(t *testing.T, cli etcdutil.Client) map[uint64]int {
	t.Helper()
	members, err := cli.MemberList(context.Background())
	if err != nil {
		t.Fatalf("MemberList: %v", err)
	}
	out := map[uint64]int{}
	for _, m := range members {
		ord, ok := member.MemberOrdinal("demo", "ns", m)
		if !ok {
			t.Fatalf("member %+v has no ordinal", m)
		}
		out[m.ID] = ord
	}
	return out
}
