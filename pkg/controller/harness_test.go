package controller

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	etcdfake "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned/fake"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// seqAnnotation numbers the test's updates of a cluster; passes record the value they saw.
const seqAnnotation = "test.etcd.operator.dev/seq"

// syncFunc scripts the fake syncer: pass is the 1-based number of the cluster's pass and
// observed what the pass's observe call returned.
type syncFunc func(ctx context.Context, key string, pass, observed int) (time.Duration, error)

// fakeSyncer records every pass: the key, when it started, and what observe returned when the
// pass read the caches. It counts passes of one object that overlap.
type fakeSyncer struct {
	observe func(namespace, name string) int
	script  syncFunc
	// work is how long each pass takes besides script: it widens the window in which an
	// overlapping pass would be caught.
	work time.Duration

	mu       sync.Mutex
	inflight map[string]int
	overlaps int
	passes   map[string][]passRecord
	// forgets are the Forget calls by key, each with the passes the key had run by then;
	// forgotInFlight counts the calls made while a pass of the key ran.
	forgets        map[string][]int
	forgotInFlight int
}

type passRecord struct {
	start    time.Time
	observed int
}

func newFakeSyncer() *fakeSyncer {
	return &fakeSyncer{inflight: map[string]int{}, passes: map[string][]passRecord{}, forgets: map[string][]int{},
		work: 200 * time.Microsecond}
}

var _ Forgetter = (*fakeSyncer)(nil)

func (s *fakeSyncer) Forget(namespace, name string) {
	key := objectKey(namespace, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[key] > 0 {
		s.forgotInFlight++
	}
	s.forgets[key] = append(s.forgets[key], len(s.passes[key]))
}

// forgotten returns a copy of the Forget calls of key: the passes run by each.
func (s *fakeSyncer) forgotten(key string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.forgets[key]...)
}

func (s *fakeSyncer) Sync(ctx context.Context, namespace, name string) (time.Duration, error) {
	key := objectKey(namespace, name)
	s.mu.Lock()
	s.inflight[key]++
	if s.inflight[key] > 1 {
		s.overlaps++
	}
	pass := len(s.passes[key]) + 1
	s.mu.Unlock()

	rec := passRecord{start: time.Now(), observed: -1}
	if s.observe != nil {
		rec.observed = s.observe(namespace, name)
	}
	time.Sleep(s.work) // simulated work, not synchronization
	var (
		requeue time.Duration
		err     error
	)
	if s.script != nil {
		requeue, err = s.script(ctx, key, pass, rec.observed)
	}

	s.mu.Lock()
	s.inflight[key]--
	s.passes[key] = append(s.passes[key], rec)
	s.mu.Unlock()
	return requeue, err
}

// records returns a copy of the passes of key.
func (s *fakeSyncer) records(key string) []passRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]passRecord(nil), s.passes[key]...)
}

func (s *fakeSyncer) passCount(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.passes[key])
}

// lastObserved is what the latest pass of key saw, -1 if none ran.
func (s *fakeSyncer) lastObserved(key string) int {
	r := s.records(key)
	if len(r) == 0 {
		return -1
	}
	return r[len(r)-1].observed
}

// maxObserved is the most any pass of key saw, -1 if none ran.
func (s *fakeSyncer) maxObserved(key string) int {
	most := -1
	for _, r := range s.records(key) {
		most = max(most, r.observed)
	}
	return most
}

// env is a controller running against fake clientsets.
type env struct {
	kube     *k8sfake.Clientset
	etcd     *etcdfake.Clientset
	inf      *Informers
	ctrl     *Controller
	syncer   *fakeSyncer
	metrics  *Metrics
	cancel   context.CancelFunc
	runDone  chan struct{}
	runErr   error
	stopOnce sync.Once
}

// clusterGauge is the EtcdCluster kind's loop gauge, as the operator declares it.
var clusterGauge = LoopGauge{Kind: "EtcdCluster", Name: "etcd_operator_clusters_managed", Help: "EtcdClusters with a loop."}

// clusterKind registers EtcdClusters as the operator does, with s as their Syncer.
func clusterKind(inf *Informers, s Syncer) Kind {
	clusters := inf.Etcd().Etcd().V1alpha1().EtcdClusters()
	core := inf.Kube().Core().V1()
	byOwner, byLabel := OwnerKey(api.GroupName, "EtcdCluster"), LabelKey(member.LabelCluster)
	return Kind{
		Name:     "EtcdCluster",
		LogField: "cluster",
		Informer: clusters.Informer(),
		Exists: ListerExists(func(namespace, name string) (*api.EtcdCluster, error) {
			return clusters.Lister().EtcdClusters(namespace).Get(name)
		}),
		Syncer: s,
		Owned: []Owned{
			{Informer: core.Pods().Informer(), KeyOf: byOwner},
			{Informer: core.Services().Informer(), KeyOf: byOwner},
			{Informer: inf.Kube().Discovery().V1().EndpointSlices().Informer(), KeyOf: byLabel},
			{Informer: inf.Kube().Policy().V1().PodDisruptionBudgets().Informer(), KeyOf: byOwner},
			{Informer: inf.Kube().Networking().V1().NetworkPolicies().Informer(), KeyOf: byOwner},
			{Informer: core.PersistentVolumeClaims().Informer(), KeyOf: byLabel},
		},
	}
}

// newEnv starts informers and a controller running the EtcdCluster kind with syncer;
// t.Cleanup stops them. tweak may adjust the config.
func newEnv(t *testing.T, syncer *fakeSyncer, tweak func(*Config)) *env {
	t.Helper()
	return newKindsEnv(t, syncer, func(inf *Informers) []Kind { return []Kind{clusterKind(inf, syncer)} },
		[]LoopGauge{clusterGauge}, tweak)
}

// newKindsEnv starts informers and a controller running the kinds that kinds registers on
// the informers, with the loop gauges gauges; syncer is the EtcdCluster kind's, if any.
func newKindsEnv(t *testing.T, syncer *fakeSyncer, kinds func(*Informers) []Kind, gauges []LoopGauge, tweak func(*Config)) *env {
	t.Helper()
	e := &env{
		kube:    k8sfake.NewClientset(),
		etcd:    etcdfake.NewSimpleClientset(),
		syncer:  syncer,
		runDone: make(chan struct{}),
	}
	e.inf = NewInformers(e.kube, e.etcd, "", 0)
	m, err := NewMetrics(prometheus.NewRegistry(), gauges...)
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	e.metrics = m
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	cfg := Config{
		Kinds:       kinds(e.inf),
		Metrics:     m,
		Log:         logrus.NewEntry(log),
		Workers:     4,
		BackoffBase: 10 * time.Millisecond,
		BackoffMax:  time.Second,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	e.ctrl, err = New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.inf.Start(ctx)
	go func() {
		defer close(e.runDone)
		e.runErr = e.ctrl.Run(ctx)
	}()
	t.Cleanup(func() { e.stop(t) })
	eventually(t, 5*time.Second, "the controller to start", e.ctrl.HasSynced)
	return e
}

// stop shuts the controller and informers down and fails the test if Run failed or took
// longer than deadline.
func (e *env) stop(t *testing.T) {
	t.Helper()
	e.stopOnce.Do(func() {
		e.cancel()
		select {
		case <-e.runDone:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
		if e.runErr != nil {
			t.Errorf("Run: %v", e.runErr)
		}
		e.inf.Shutdown()
	})
}

// createCluster creates an EtcdCluster through the fake API.
func (e *env) createCluster(t *testing.T, namespace, name string) {
	t.Helper()
	c := &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
		Annotations: map[string]string{seqAnnotation: "0"}}}
	if _, err := e.etcd.EtcdV1alpha1().EtcdClusters(namespace).Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
		t.Errorf("creating cluster %s/%s: %v", namespace, name, err)
	}
}

// setSeq updates the cluster's seq annotation, one event.
func (e *env) setSeq(namespace, name string, seq int) error {
	clusters := e.etcd.EtcdV1alpha1().EtcdClusters(namespace)
	c, err := clusters.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	c = c.DeepCopy()
	c.Annotations[seqAnnotation] = strconv.Itoa(seq)
	_, err = clusters.Update(context.Background(), c, metav1.UpdateOptions{})
	return err
}

// seqObserver reads the seq annotation of the cluster from the informer cache.
func (e *env) seqObserver(namespace, name string) int {
	c, err := e.inf.Etcd().Etcd().V1alpha1().EtcdClusters().Lister().EtcdClusters(namespace).Get(name)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(c.Annotations[seqAnnotation])
	if err != nil {
		return -1
	}
	return n
}

// loopState tells whether the EtcdCluster key has a running loop and whether a stopped one is
// still exiting.
func (e *env) loopState(key string) (running, exiting bool) {
	return e.kindLoopState("EtcdCluster", key)
}

// kindLoopState tells whether key of kind has a running loop and whether a stopped one is
// still exiting.
func (e *env) kindLoopState(kind, key string) (running, exiting bool) {
	d := e.ctrl.kind(kind)
	d.mu.Lock()
	defer d.mu.Unlock()
	_, running = d.loops[key]
	_, exiting = d.exiting[key]
	return running, exiting
}

// kind is the dispatcher of the kind named name, nil if none.
func (c *Controller) kind(name string) *dispatcher {
	for _, d := range c.kinds {
		if d.kind.Name == name {
			return d
		}
	}
	return nil
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// errTransient is what scripted passes fail with.
var errTransient = errors.New("transient failure")
