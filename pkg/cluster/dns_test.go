package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/dnsutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// fakeDNS answers Serves from a set of served hosts and counts the questions.
type fakeDNS struct {
	mu     sync.Mutex
	served map[string]bool
	err    error
	asked  []string
}

func (d *fakeDNS) Serves(_ context.Context, host string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, host)
	return d.served[host], d.err
}

func (d *fakeDNS) questions() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.asked)
}

// fakeEtcd is a running one-member cluster as the operator's client sees it: the member list
// and the status of the seed at its pod IP. Adding a learner is recorded; any other change
// fails the test.
type fakeEtcd struct {
	t       *testing.T
	mu      sync.Mutex
	members []etcdutil.Member
	status  map[string]etcdutil.Status // by client URL
	added   []string                   // peer URLs added as learners
	alarms  []etcdutil.Alarm
}

func newFakeEtcd(t *testing.T, c *api.EtcdCluster, seedIP string) *fakeEtcd {
	return &fakeEtcd{t: t,
		members: []etcdutil.Member{{ID: 1, Name: "demo-0", PeerURLs: []string{member.PeerURL(c, 0)}}},
		status:  map[string]etcdutil.Status{member.PodClientURL(seedIP, member.ClientTLS(c)): {ID: 1, Leader: 1, Version: "3.6.16"}},
	}
}

func (f *fakeEtcd) New([]string, etcdutil.ConnConfig) (etcdutil.Client, error) {
	return fakeEtcdClient{f}, nil
}

func (f *fakeEtcd) learnersAdded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.added)
}

type fakeEtcdClient struct{ f *fakeEtcd }

var _ etcdutil.Client = fakeEtcdClient{}

func (c fakeEtcdClient) MemberList(context.Context) ([]etcdutil.Member, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return slices.Clone(c.f.members), nil
}

func (c fakeEtcdClient) MemberAddAsLearner(_ context.Context, peerURL string) (etcdutil.Member, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	m := etcdutil.Member{ID: uint64(len(c.f.members) + 1), PeerURLs: []string{peerURL}, IsLearner: true}
	c.f.members = append(c.f.members, m)
	c.f.added = append(c.f.added, peerURL)
	return m, nil
}

func (c fakeEtcdClient) MemberPromote(context.Context, uint64) error {
	return c.unexpected("MemberPromote")
}
func (c fakeEtcdClient) MemberRemove(context.Context, uint64) error {
	return c.unexpected("MemberRemove")
}
func (c fakeEtcdClient) MemberUpdate(context.Context, uint64, []string) error {
	return c.unexpected("MemberUpdate")
}
func (c fakeEtcdClient) MoveLeader(context.Context, string, uint64) error {
	return c.unexpected("MoveLeader")
}

func (c fakeEtcdClient) Status(_ context.Context, endpoint string) (etcdutil.Status, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if st, ok := c.f.status[endpoint]; ok {
		return st, nil
	}
	return etcdutil.Status{}, errors.New("connection refused")
}

func (c fakeEtcdClient) AlarmList(context.Context) ([]etcdutil.Alarm, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return slices.Clone(c.f.alarms), nil
}

func (c fakeEtcdClient) DowngradeValidate(context.Context, string) error {
	return c.unexpected("DowngradeValidate")
}
func (c fakeEtcdClient) DowngradeEnable(context.Context, string) error {
	return c.unexpected("DowngradeEnable")
}
func (c fakeEtcdClient) DowngradeCancel(context.Context) error {
	return c.unexpected("DowngradeCancel")
}
func (c fakeEtcdClient) Close() error { return nil }

func (c fakeEtcdClient) unexpected(call string) error {
	c.f.t.Errorf("unexpected etcd %s", call)
	return errors.New("unexpected in this test")
}

// memberPod is member ordinal's pod with the given IP, created at created, in the given
// phase, with its DNS record published in slice.
func memberPod(c *api.EtcdCluster, ordinal int, ip string, phase corev1.PodPhase, created time.Time, slice *discoveryv1.EndpointSlice) *corev1.Pod {
	state, initial := etcdutil.ClusterStateExisting, []int{0, ordinal}
	if ordinal == 0 {
		state, initial = etcdutil.ClusterStateNew, []int{0}
	}
	pod := member.Pod(c, member.Template{Ordinal: ordinal, ClusterState: state, InitialCluster: initial}, testInitImage)
	pod.UID = types.UID(fmt.Sprintf("pod-uid-%d", ordinal))
	pod.CreationTimestamp = metav1.NewTime(created)
	pod.Status = corev1.PodStatus{Phase: phase, PodIP: ip}
	slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
		Addresses:  []string{ip},
		Hostname:   ptr.To(pod.Name),
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
	})
	return pod
}

// memberSlice is the EndpointSlice of the member Service of pod's member, routing to the pod.
func memberSlice(c *api.EtcdCluster, pod *corev1.Pod) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name + "-abcde", Namespace: c.Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: pod.Name, member.LabelCluster: c.Name, member.LabelMember: pod.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{pod.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
	}
}

// growing is a cluster whose seed runs, with the second member's pod created, given its IP
// and routed to by its member Service, its member-init waiting to be added.
func growing(t *testing.T, joinerCreated time.Time) (*fixture, *fakeEtcd) {
	c := newCluster(3)
	c.Status.Size = 1
	headless := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-abcde", Namespace: c.Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: member.PeerServiceName(c.Name), member.LabelCluster: c.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	seed := memberPod(c, 0, "10.244.0.9", corev1.PodRunning, time.Now().Add(-time.Minute), headless)
	joiner := memberPod(c, 1, "10.244.0.10", corev1.PodRunning, joinerCreated, headless)
	f := newFixture(t, c, seed, joiner, headless, memberSlice(c, seed), memberSlice(c, joiner),
		member.PeerService(c), member.ClientService(c), member.MemberService(c, 0), member.MemberService(c, 1), member.MemberService(c, 2))
	etcd := newFakeEtcd(t, c, "10.244.0.9")
	f.with(func(d *Deps) { d.Etcd = etcd })
	return f, etcd
}

// A pod is published only by its own member Service: the headless Service's record, or
// another member's Service, or an address of an earlier pod, does not count.
func TestPublishedPods(t *testing.T) {
	c := newCluster(3)
	headless := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		discoveryv1.LabelServiceName: member.PeerServiceName(c.Name)}}}
	p0 := memberPod(c, 0, "10.0.0.1", corev1.PodRunning, time.Now(), headless)
	p1 := memberPod(c, 1, "10.0.0.2", corev1.PodRunning, time.Now(), headless)
	p2 := memberPod(c, 2, "10.0.0.3", corev1.PodRunning, time.Now(), headless)
	stale := memberSlice(c, p1)
	stale.Endpoints[0].Addresses = []string{"10.0.0.99"}
	crossed := memberSlice(c, p0)
	crossed.Labels[discoveryv1.LabelServiceName] = p2.Name
	got := publishedPods([]*discoveryv1.EndpointSlice{headless, memberSlice(c, p0), stale, crossed},
		map[int]*corev1.Pod{0: p0, 1: p1, 2: p2})
	if !got["demo-0"] || got["demo-1"] || got["demo-2"] || len(got) != 1 {
		t.Errorf("published %v, want demo-0 only", got)
	}
}

// A member is added, which makes the leader dial it by name at once, only once cluster DNS
// serves the name of its pod: a published EndpointSlice record is not enough, CoreDNS may not
// have seen it yet. DNS is asked once per pod, not once per pass.
func TestSyncWaitsForClusterDNS(t *testing.T) {
	f, etcd := growing(t, time.Now())
	dns := &fakeDNS{served: map[string]bool{"demo-0.ns.svc": true}}
	f.with(func(d *Deps) { d.DNS = dns })
	ctx := context.Background()

	if _, err := f.r.Sync(ctx, "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got := etcd.learnersAdded(); len(got) != 0 {
		t.Fatalf("added %v while DNS does not serve demo-1 yet", got)
	}
	if n := dns.questions(); n != 2 {
		t.Fatalf("asked DNS %v, want demo-0 and demo-1 once each", dns.asked)
	}

	dns.mu.Lock()
	dns.served["demo-1.ns.svc"] = true
	dns.mu.Unlock()
	if _, err := f.r.Sync(ctx, "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got := etcd.learnersAdded(); len(got) != 1 || got[0] != "http://demo-1.ns.svc:2380" {
		t.Fatalf("added %v once DNS serves demo-1, want demo-1", got)
	}
	if _, err := f.r.Sync(ctx, "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := dns.questions(); n != 3 {
		t.Errorf("asked DNS %d times over three passes, want 3 (a served pod is not asked again)", n)
	}

	// The cluster goes: what was remembered of its pods goes with it.
	c, _ := f.cinf.Etcd().V1alpha1().EtcdClusters().Lister().EtcdClusters("ns").Get("demo")
	_ = f.cinf.Etcd().V1alpha1().EtcdClusters().Informer().GetIndexer().Delete(c)
	if _, err := f.r.Sync(ctx, "ns", "demo"); !errors.Is(err, ErrGone) {
		t.Fatalf("Sync of the deleted cluster = %v, want ErrGone", err)
	}
	if m := f.r.served.get("ns/demo"); m != nil {
		t.Errorf("served pods of a deleted cluster kept: %v", m)
	}
}

// A DNS server that never confirms (it fails, or does not answer the probe's query type)
// holds a published pod back for dnsutil.TrustAfter at most: past it the EndpointSlice is trusted.
func TestSyncTrustsEndpointSliceAfterDNSTimeout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		age       time.Duration
		wantAdded bool
	}{
		{"young pod waits", time.Second, false},
		{"old pod is trusted", dnsutil.TrustAfter + time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, etcd := growing(t, time.Now().Add(-tc.age))
			f.with(func(d *Deps) { d.DNS = &fakeDNS{err: errors.New("i/o timeout")} })
			if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			if got := len(etcd.learnersAdded()) == 1; got != tc.wantAdded {
				t.Errorf("added the member = %v, want %v", got, tc.wantAdded)
			}
		})
	}
}

// The member Services follow the members: one per ordinal below spec.size, or with a pod or
// a member; the others go once etcd's member list is known, and a Service of a member name
// that is not the cluster's is left alone.
func TestSyncKeepsMemberServices(t *testing.T) {
	c := newCluster(1)
	c.Status.Size = 1
	headless := &discoveryv1.EndpointSlice{}
	seed := memberPod(c, 0, "10.244.0.9", corev1.PodRunning, time.Now().Add(-time.Minute), headless)
	// Member 2 was removed and its pod is gone; ordinal 3 has a pod still going.
	going := memberPod(c, 3, "10.244.0.12", corev1.PodRunning, time.Now().Add(-time.Minute), headless)
	going.DeletionTimestamp = ptr.To(metav1.NewTime(time.Now()))
	foreign := member.MemberService(c, 4)
	foreign.OwnerReferences = nil
	f := newFixture(t, c, seed, going, member.PeerService(c), member.ClientService(c),
		member.MemberService(c, 1), member.MemberService(c, 2), member.MemberService(c, 3), foreign)
	f.with(func(d *Deps) { d.Etcd = newFakeEtcd(t, c, "10.244.0.9") })
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	created, deleted := f.applied("services"), []string{}
	for _, a := range f.actions("delete", "services") {
		deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
	}
	slices.Sort(deleted)
	if !slices.Equal(created, []string{"demo-0"}) || !slices.Equal(deleted, []string{"demo-1", "demo-2"}) {
		t.Errorf("created %v and deleted %v, want demo-0 created, demo-1 and demo-2 deleted", created, deleted)
	}

	// Nobody answers: nothing is deleted, whatever etcd might still list.
	f2 := newFixture(t, c, seed, member.PeerService(c), member.ClientService(c), member.MemberService(c, 0), member.MemberService(c, 2))
	f2.with(func(d *Deps) { d.Etcd = &fakeEtcd{t: t, status: map[string]etcdutil.Status{}} })
	if _, err := f2.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got := f2.actions("delete", "services"); len(got) != 0 {
		t.Errorf("deleted %d services while no member answered", len(got))
	}
}

// A pod made for a cluster whose members were added before the member Services names each
// of them at the headless peer URL etcd lists, and itself at its own Service.
func TestSyncNamesMembersAsEtcdLists(t *testing.T) {
	f, etcd := growing(t, time.Now())
	c, _ := f.cinf.Etcd().V1alpha1().EtcdClusters().Lister().EtcdClusters("ns").Get("demo")
	etcd.members[0].PeerURLs = []string{member.HeadlessPeerURL(c, 0)}
	// The first pass adds the second member (at its Service); while it starts, the next
	// makes the third pod ahead.
	for range 2 {
		if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
	if got := etcd.learnersAdded(); len(got) != 1 || got[0] != member.PeerURL(c, 1) {
		t.Fatalf("added %v, want demo-1 at its Service", got)
	}
	creates := f.actions("create", "pods")
	if len(creates) != 1 {
		t.Fatalf("created %d pods, want the third ahead", len(creates))
	}
	p := creates[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	tmpl, _ := member.ReadTemplate(c.Name, p)
	want := map[int]string{0: member.HeadlessPeerURL(c, 0)}
	if p.Name != "demo-2" || len(tmpl.PeerURLs) != 1 || tmpl.PeerURLs[0] != want[0] {
		t.Errorf("pod %s made with peer URLs %v, want %v (the others at their Services)", p.Name, tmpl.PeerURLs, want)
	}
}
