package clustermetrics

import (
	"sync"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
)

// Counters are what the clusters' passes did, as only this operator's memory knows it: the
// actions taken by kind, the members replaced and the time of the last successful pass, by
// cluster, and the etcd clients opened and closed, by all of them. The cluster loops write them (cluster.PassRecorder), the Collector reads them at
// scrape time. A cluster's counts are dropped when its loop ends (Forget); they start again
// from zero in a new leader, which Prometheus' rate() and increase() take as a counter reset.
// Safe for concurrent use.
type Counters struct {
	mu       sync.Mutex
	clusters map[key]*counts
	// clientsOpened and clientsClosed count the etcd clients every cluster's loop opened and
	// closed. They are not dropped with a cluster: what a deleted cluster opened was opened.
	clientsOpened, clientsClosed uint64
}

// key is a cluster's namespace and name.
type key struct{ namespace, name string }

// counts are one cluster's counters.
type counts struct {
	actions      map[plan.ActionKind]uint64
	replacements uint64
	// lastPass is the end of the last pass that returned no error; zero before the first.
	lastPass time.Time
}

// NewCounters returns empty counters.
func NewCounters() *Counters {
	return &Counters{clusters: map[key]*counts{}}
}

// entry is the counts of a cluster, created on first use. c.mu must be held.
func (c *Counters) entry(namespace, name string) *counts {
	k := key{namespace, name}
	e, ok := c.clusters[k]
	if !ok {
		e = &counts{actions: map[plan.ActionKind]uint64{}}
		c.clusters[k] = e
	}
	return e
}

// ActionTaken counts an action of kind that a pass of the cluster carried out.
func (c *Counters) ActionTaken(namespace, name string, kind plan.ActionKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entry(namespace, name).actions[kind]++
}

// MemberReplaced counts a member of the cluster removed to be added again under its name.
func (c *Counters) MemberReplaced(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entry(namespace, name).replacements++
}

// PassSucceeded records that a pass of the cluster ended without error at t.
func (c *Counters) PassSucceeded(namespace, name string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entry(namespace, name).lastPass = t
}

// Forget drops the cluster's counts: its loop has ended.
func (c *Counters) Forget(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.clusters, key{namespace, name})
}

// EtcdClientOpened counts an etcd client a pass opened.
func (c *Counters) EtcdClientOpened(string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clientsOpened++
}

// EtcdClientClosed counts an etcd client closed.
func (c *Counters) EtcdClientClosed(string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clientsClosed++
}

// etcdClients returns the etcd clients opened and closed so far.
func (c *Counters) etcdClients() (opened, closed uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientsOpened, c.clientsClosed
}

// get returns a copy of the cluster's counts; ok is false when none were recorded.
func (c *Counters) get(namespace, name string) (counts, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.clusters[key{namespace, name}]
	if !ok {
		return counts{}, false
	}
	out := *e
	out.actions = make(map[plan.ActionKind]uint64, len(e.actions))
	for k, v := range e.actions {
		out.actions[k] = v
	}
	return out, true
}
