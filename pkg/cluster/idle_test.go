package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// An idle healthy cluster costs next to nothing: once a pass has found nothing to do, the
// passes after it write nothing to the API, read nothing from it that the informers' caches
// hold, record no Event, ask cluster DNS nothing, and open no etcd client (the clients of the
// first pass are kept). The cluster is made
// from nothing by the operator itself, in a world that answers as Kubernetes and etcd would:
// what a pass writes reaches the caches before the next one, the kubelet starts every pod it
// is given, and etcd adds, starts and promotes members.
func TestIdlePassCostsNothing(t *testing.T) {
	// A Secret of the user's, labelled as the docs say, so that the cache holds it.
	peers := userSecret(t, "peers", userCA(t, "user CA", time.Now().Add(-time.Hour)),
		[]string{"demo-0.ns.svc", "demo-1.ns.svc", "demo-2.ns.svc"}, time.Now().Add(-time.Hour), 90*24*time.Hour)
	peers.Labels = map[string]string{member.LabelManagedBy: member.ManagedByValue}
	for _, tc := range []struct {
		name string
		spec func(*api.EtcdCluster)
		objs []runtime.Object
	}{
		{"plaintext, emptyDir", func(*api.EtcdCluster) {}, nil},
		{"TLS on both ports, claims", func(c *api.EtcdCluster) {
			c.Spec.TLS = &api.TLSSpec{Peer: &api.TLSSource{}, Client: &api.TLSSource{}}
			c.Spec.Storage = &api.StorageSpec{VolumeClaimTemplate: &api.VolumeClaimTemplate{Spec: api.ClaimSpec{
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}
			c.Spec.NetworkPolicy = &api.NetworkPolicySpec{}
		}, nil},
		{"peer TLS from a Secret of the user's", func(c *api.EtcdCluster) {
			c.Spec.TLS = &api.TLSSpec{Peer: &api.TLSSource{SecretName: "peers"}}
		}, []runtime.Object{peers}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newIdleWorld(t, tc.spec, tc.objs...)
			w.converge()
			w.healthy()
			opened, asked := w.etcd.opened(), w.dns.questions()
			if asked == 0 {
				t.Fatal("cluster DNS was never asked while the cluster grew")
			}
			for len(w.f.recorder.Events) > 0 {
				<-w.f.recorder.Events
			}
			for i := range 3 {
				if got := w.pass(); len(got) != 0 {
					t.Errorf("idle pass %d called the API: %s", i+1, strings.Join(got, "; "))
				}
				if w.requeue != DefaultIdleCheck {
					t.Errorf("idle pass %d asks to run again after %v, want the idle check's %v", i+1, w.requeue, DefaultIdleCheck)
				}
			}
			if n := w.etcd.opened() - opened; n != 0 {
				t.Errorf("idle passes opened %d etcd clients, want none: the first pass's are kept", n)
			}
			if n := w.dns.questions() - asked; n != 0 {
				t.Errorf("idle passes asked cluster DNS %d times, want none: it is asked once per pod", n)
			}
			if n := len(w.f.recorder.Events); n != 0 {
				t.Errorf("idle passes recorded %d Events, first %q", n, <-w.f.recorder.Events)
			}
		})
	}
}

// healthy fails the test unless the cluster's status says it is Available with its three
// members ready: what the idle passes keep is a healthy cluster's view, not a stuck one's.
func (w *idleWorld) healthy() {
	w.t.Helper()
	c, err := w.f.client.EtcdV1alpha1().EtcdClusters(w.c.Namespace).Get(context.Background(), w.c.Name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(c.Status.Conditions, string(api.ConditionAvailable)) || c.Status.ReadyMembers != 3 ||
		meta.IsStatusConditionTrue(c.Status.Conditions, string(api.ConditionDegraded)) {
		w.t.Fatalf("settled cluster: %d ready, conditions %+v; want 3 members ready, Available and not Degraded",
			c.Status.ReadyMembers, c.Status.Conditions)
	}
}

// idleWorld is a fixture whose caches, pods and etcd follow what the passes do.
type idleWorld struct {
	t      *testing.T
	f      *fixture
	c      *api.EtcdCluster
	etcd   *simEtcd
	dns    *fakeDNS
	nextIP int
	// requeue is when the last pass asked to run again.
	requeue time.Duration
}

func newIdleWorld(t *testing.T, spec func(*api.EtcdCluster), objs ...runtime.Object) *idleWorld {
	c := newCluster(3)
	spec(c)
	f := newFixture(t, append([]runtime.Object{c}, objs...)...)
	w := &idleWorld{t: t, f: f, c: c, dns: &fakeDNS{served: map[string]bool{}}}
	for ord := range int(c.Spec.Size) {
		w.dns.served[member.Host(c.Name, c.Namespace, ord)] = true
	}
	w.etcd = &simEtcd{t: t, w: w}
	f.with(func(d *Deps) {
		d.Etcd = w.etcd
		d.DNS = w.dns
		d.Secrets = f.kinf.Core().V1().Secrets().Lister()
		d.Leases = f.kinf.Coordination().V1().Leases().Lister()
		d.Installation = "etcd-operator-system/etcd-operator"
		d.Log = quietLog()
	})
	return w
}

// converge runs passes until one calls no write of the API, and fails the test if none does
// within a bound far above what growing three members takes.
func (w *idleWorld) converge() {
	w.t.Helper()
	for range 60 {
		if !slices.ContainsFunc(w.pass(), isWrite) {
			return
		}
	}
	w.t.Fatal("the cluster did not settle: every pass wrote to the API")
}

func isWrite(call string) bool {
	verb, _, _ := strings.Cut(call, " ")
	return verb != "get" && verb != "list" && verb != "watch"
}

// pass runs one pass and returns the API calls it made ("verb resource name"); then the world
// moves on: the kubelet, etcd and the informers catch up with what it did.
func (w *idleWorld) pass() []string {
	w.t.Helper()
	f := w.f
	f.kube.ClearActions()
	f.client.ClearActions()
	requeue, err := f.r.Sync(context.Background(), w.c.Namespace, w.c.Name)
	if err != nil {
		w.t.Fatalf("Sync: %v", err)
	}
	w.requeue = requeue
	var calls []string
	for _, a := range append(f.kube.Actions(), f.client.Actions()...) {
		call := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			call += "/" + a.GetSubresource()
		}
		if n, ok := a.(interface{ GetName() string }); ok && n.GetName() != "" {
			call += " " + n.GetName()
		}
		calls = append(calls, call)
	}
	w.runPods()
	w.syncCaches()
	f.kube.ClearActions()
	f.client.ClearActions()
	return calls
}

// runPods is the kubelet, the claims' provisioner and the EndpointSlice controller: every pod
// gets an address and runs ready, every claim is bound, and every member's Service routes to
// its pod.
func (w *idleWorld) runPods() {
	ctx, ns := context.Background(), w.c.Namespace
	kube := w.f.kube
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.PodIP == "" {
			w.nextIP++
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.244.0.%d", w.nextIP),
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Ready: true, Started: ptr.To(true)}}}
			if _, err := kube.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
				w.t.Fatal(err)
			}
		}
		// The EndpointSlice controller labels a Service's slices with the Service's labels.
		slice := memberSlice(w.c, &p)
		ord, _ := member.Ordinal(w.c.Name, p.Name)
		maps.Copy(slice.Labels, member.MemberService(w.c, ord).Labels)
		if _, err := kube.DiscoveryV1().EndpointSlices(ns).Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
			if _, err := kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
				w.t.Fatal(err)
			}
		}
	}
	claims, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, pvc := range claims.Items {
		if pvc.Status.Phase != corev1.ClaimBound {
			pvc.Status.Phase = corev1.ClaimBound
			if _, err := kube.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, &pvc, metav1.UpdateOptions{}); err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

// syncCaches puts in each informer's cache what the API holds, as a watch would: the
// Kubernetes objects labelled as the operator's (the operator's informers see no others),
// and every EtcdCluster.
func (w *idleWorld) syncCaches() {
	ctx, ns := context.Background(), w.c.Namespace
	kube, kinf := w.f.kube, w.f.kinf
	lists := map[cache.SharedIndexInformer]func() ([]runtime.Object, error){
		kinf.Core().V1().Pods().Informer(): func() ([]runtime.Object, error) {
			l, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return items(l.Items), err
		},
		kinf.Core().V1().Services().Informer(): func() ([]runtime.Object, error) {
			l, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
			return items(l.Items), err
		},
		kinf.Discovery().V1().EndpointSlices().Informer(): func() ([]runtime.Object, error) {
			l, err := kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
			return items(l.Items), err
		},
		kinf.Policy().V1().PodDisruptionBudgets().Informer(): func() ([]runtime.Object, error) {
			l, err := kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
			return items(l.Items), err
		},
		kinf.Core().V1().PersistentVolumeClaims().Informer(): func() ([]runtime.Object, error) {
			l, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
			return items(l.Items), err
		},
		kinf.Core().V1().Secrets().Informer(): func() ([]runtime.Object, error) {
			l, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return items(l.Items), err
		},
		kinf.Networking().V1().NetworkPolicies().Informer(): func() ([]runtime.Object, error) {
			l, err := kube.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
			return items(l.Items), err
		},
		kinf.Coordination().V1().Leases().Informer(): func() ([]runtime.Object, error) {
			l, err := kube.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
			return items(l.Items), err
		},
	}
	for inf, list := range lists {
		objs, err := list()
		if err != nil {
			w.t.Fatal(err)
		}
		w.replace(inf, objs, member.ManagedSelector())
	}
	clusters, err := w.f.client.EtcdV1alpha1().EtcdClusters(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	w.replace(w.f.cinf.Etcd().V1alpha1().EtcdClusters().Informer(), items(clusters.Items), labels.Everything())
}

// replace makes objs, those that selector matches, the whole content of inf's cache.
func (w *idleWorld) replace(inf cache.SharedIndexInformer, objs []runtime.Object, selector labels.Selector) {
	var keep []any
	for _, o := range objs {
		if m, ok := o.(metav1.Object); ok && selector.Matches(labels.Set(m.GetLabels())) {
			keep = append(keep, o)
		}
	}
	if err := inf.GetIndexer().Replace(keep, ""); err != nil {
		w.t.Fatal(err)
	}
}

// items are pointers to the elements of a list's Items.
func items[T any, P interface {
	*T
	runtime.Object
}](list []T) []runtime.Object {
	out := make([]runtime.Object, 0, len(list))
	for i := range list {
		out = append(out, P(&list[i]))
	}
	return out
}

// simEtcd is the etcd the world's pods run: the seed's pod bootstraps a cluster of one, a
// learner added starts once its pod runs, and a promotion makes it a voter. Each member
// answers at its pod's address, on the scheme its pod serves. It counts the clients opened.
type simEtcd struct {
	t *testing.T
	w *idleWorld

	mu      sync.Mutex
	clients int
	members []etcdutil.Member
}

func (e *simEtcd) opened() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.clients
}

func (e *simEtcd) New(endpoints []string, conn etcdutil.ConnConfig) (etcdutil.Client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ep := range endpoints {
		if strings.HasPrefix(ep, "https://") != (conn.TLS != nil) {
			e.t.Errorf("client for %v opened with TLS %v", endpoints, conn.TLS != nil)
		}
	}
	e.clients++
	return &simClient{e: e, endpoints: slices.Clone(endpoints)}, nil
}

// ordinalAt is the ordinal of the running member pod at endpoint's address.
func (e *simEtcd) ordinalAt(endpoint string) (int, bool) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return 0, false
	}
	pods, err := e.w.f.kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"),
		corev1.SchemeGroupVersion.WithKind("Pod"), e.w.c.Namespace)
	if err != nil {
		return 0, false
	}
	for _, p := range pods.(*corev1.PodList).Items {
		if p.Status.PodIP == u.Hostname() && p.Status.Phase == corev1.PodRunning {
			return member.Ordinal(e.w.c.Name, p.Name)
		}
	}
	return 0, false
}

// memberOf is the member of ordinal ord, starting it (the seed: bootstrapping the cluster) as
// its pod runs. e.mu must be held.
func (e *simEtcd) memberOf(ord int) *etcdutil.Member {
	if ord == 0 && len(e.members) == 0 {
		e.members = append(e.members, etcdutil.Member{ID: 1, PeerURLs: []string{member.PeerURL(e.w.c, 0)}})
	}
	for i := range e.members {
		m := &e.members[i]
		if o, ok := member.MemberOrdinal(e.w.c.Name, e.w.c.Namespace, *m); ok && o == ord {
			m.Name = member.Name(e.w.c.Name, ord)
			return m
		}
	}
	return nil
}

type simClient struct {
	e         *simEtcd
	endpoints []string
}

var _ etcdutil.Client = (*simClient)(nil)

func (c *simClient) Status(_ context.Context, endpoint string) (etcdutil.Status, error) {
	ord, ok := c.e.ordinalAt(endpoint)
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	if !ok {
		return etcdutil.Status{}, errors.New("connection refused")
	}
	m := c.e.memberOf(ord)
	if m == nil {
		return etcdutil.Status{}, errors.New("member-init: not a member yet")
	}
	return etcdutil.Status{ID: m.ID, ClusterID: 0xc1, Leader: 1, IsLearner: m.IsLearner,
		Version: api.DefaultVersion, RaftIndex: 10, RaftAppliedIndex: 10}, nil
}

func (c *simClient) MemberList(context.Context) ([]etcdutil.Member, error) {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	return slices.Clone(c.e.members), nil
}

func (c *simClient) MemberAddAsLearner(_ context.Context, peerURL string) (etcdutil.Member, error) {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	m := etcdutil.Member{ID: uint64(len(c.e.members) + 1), PeerURLs: []string{peerURL}, IsLearner: true}
	c.e.members = append(c.e.members, m)
	return m, nil
}

func (c *simClient) MemberPromote(_ context.Context, id uint64) error {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	for i := range c.e.members {
		if c.e.members[i].ID == id {
			c.e.members[i].IsLearner = false
			return nil
		}
	}
	return etcdutil.ErrMemberNotFound
}

func (c *simClient) AlarmList(context.Context) ([]etcdutil.Alarm, error) { return nil, nil }
func (c *simClient) Close() error                                        { return nil }

func (c *simClient) unexpected(call string) error {
	c.e.t.Errorf("unexpected etcd %s on a cluster that only grows", call)
	return errors.New("unexpected in this test")
}
func (c *simClient) MemberUpdate(context.Context, uint64, []string) error {
	return c.unexpected("MemberUpdate")
}
func (c *simClient) MemberRemove(context.Context, uint64) error { return c.unexpected("MemberRemove") }
func (c *simClient) MoveLeader(context.Context, string, uint64) error {
	return c.unexpected("MoveLeader")
}
func (c *simClient) DowngradeValidate(context.Context, string) error {
	return c.unexpected("DowngradeValidate")
}
func (c *simClient) DowngradeEnable(context.Context, string) error {
	return c.unexpected("DowngradeEnable")
}
func (c *simClient) DowngradeCancel(context.Context) error { return c.unexpected("DowngradeCancel") }
