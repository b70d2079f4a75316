package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/k8sutil"
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

// startingSeed is a seed pod that has its IP and is published in the headless Service's
// EndpointSlice, while its etcd is not running yet (so a pass dials no etcd).
func startingSeed(c *api.EtcdCluster, created time.Time) (*corev1.Pod, *discoveryv1.EndpointSlice) {
	pod := k8sutil.MemberPod(c, k8sutil.MemberPodParams{Ordinal: 0, ClusterState: k8sutil.ClusterStateNew,
		InitialCluster: []int{0}, InitImage: "x", DataVolume: k8sutil.DataVolume(&c.Spec)})
	pod.UID = "pod-uid-0"
	pod.CreationTimestamp = metav1.NewTime(created)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.244.0.9"}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-abcde", Namespace: c.Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: k8sutil.PeerServiceName(c.Name)}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"10.244.0.9"},
			Hostname:   ptr.To("demo-0"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
	}
	return pod, slice
}

func createdPods(f *fixture) []string {
	var names []string
	for _, a := range f.actions("create", "pods") {
		names = append(names, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Name)
	}
	return names
}

// A published pod whose name cluster DNS does not serve yet is not told to anybody: the next
// member's pod, whose member-init would look the seed up, is created only once DNS answers
// for the seed's name. DNS is asked once per pod, not once per pass.
func TestSyncWaitsForClusterDNS(t *testing.T) {
	c := newCluster(3)
	seed, slice := startingSeed(c, time.Now())
	f := newFixture(t, c, seed, slice, k8sutil.PeerService(c), k8sutil.ClientService(c))
	dns := &fakeDNS{served: map[string]bool{}}
	f.r.deps.DNS = dns
	ctx := context.Background()

	if _, err := f.r.Sync(ctx, "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got := createdPods(f); len(got) != 0 {
		t.Fatalf("created %v while DNS does not serve demo-0 yet", got)
	}
	if dns.questions() != 1 || dns.asked[0] != "demo-0.demo.ns.svc" {
		t.Fatalf("asked DNS %v, want demo-0.demo.ns.svc once", dns.asked)
	}

	dns.served["demo-0.demo.ns.svc"] = true
	if _, err := f.r.Sync(ctx, "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got := createdPods(f); len(got) != 1 || got[0] != "demo-1" {
		t.Fatalf("created %v once DNS serves demo-0, want demo-1", got)
	}
	if _, err := f.r.Sync(ctx, "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if n := dns.questions(); n != 2 {
		t.Errorf("asked DNS %d times over three passes, want 2 (a served pod is not asked again)", n)
	}

	// The cluster goes: what was remembered of its pods goes with it.
	_ = f.cinf.Etcd().V1alpha1().EtcdClusters().Informer().GetIndexer().Delete(c)
	if _, err := f.r.Sync(ctx, "ns", "demo"); !errors.Is(err, ErrClusterGone) {
		t.Fatalf("Sync of the deleted cluster = %v, want ErrClusterGone", err)
	}
	if m := f.r.served.get("ns/demo"); m != nil {
		t.Errorf("served pods of a deleted cluster kept: %v", m)
	}
}

// A DNS server that never confirms (it fails, or does not answer the probe's query type)
// holds a published pod back for dnsTrustAfter at most: past it the EndpointSlice is trusted.
func TestSyncTrustsEndpointSliceAfterDNSTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		age     time.Duration
		wantPod bool
	}{
		{"young pod waits", time.Second, false},
		{"old pod is trusted", dnsTrustAfter + time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(3)
			seed, slice := startingSeed(c, time.Now().Add(-tc.age))
			f := newFixture(t, c, seed, slice, k8sutil.PeerService(c), k8sutil.ClientService(c))
			f.r.deps.DNS = &fakeDNS{err: errors.New("i/o timeout")}
			if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			if got := len(createdPods(f)) == 1; got != tc.wantPod {
				t.Errorf("created the next pod = %v, want %v", got, tc.wantPod)
			}
		})
	}
}
