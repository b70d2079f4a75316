// Package clustermetrics exports the per-cluster metrics: what each EtcdCluster's status says
// (members desired and ready, learners, voters, quorum margin, conditions, rollout progress,
// certificate expiry), its last successful backup, its backup schedules, and the counters its
// loop keeps (actions, replacements, last successful pass). The Collector reads the informers'
// caches at scrape time, so the series of a deleted cluster go with it, and nothing but the
// counters is kept between scrapes.
package clustermetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	etcdlisters "github.com/etcd-operator/etcd-operator/pkg/generated/listers/etcd/v1alpha1"
)

// Source is what the Collector reads: the caches of the leading replica's informers and its
// loops' counters.
type Source struct {
	Clusters  etcdlisters.EtcdClusterLister
	Backups   etcdlisters.EtcdBackupLister
	Schedules etcdlisters.EtcdBackupScheduleLister
	Counters  *Counters
}

// Collector is a prometheus.Collector of the per-cluster metrics. It exports nothing until
// SetSource gives it caches: a replica that does not lead has none, and exports no cluster.
type Collector struct {
	mu  sync.RWMutex
	src *Source
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector with no source.
func NewCollector() *Collector { return &Collector{} }

// SetSource makes the Collector read src from the next scrape on; nil stops it (leadership
// lost: the caches it read are stopped).
func (c *Collector) SetSource(src *Source) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.src = src
}

func (c *Collector) source() *Source {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.src
}

var clusterLabels = []string{"namespace", "name"}

func clusterDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, clusterLabels...), extra...), nil)
}

var (
	descDesired = clusterDesc("etcd_operator_cluster_members_desired",
		"Members the cluster's spec asks for (spec.size).")
	descReady = clusterDesc("etcd_operator_cluster_members_ready",
		"Members that are started, healthy and voting (status.readyMembers).")
	descVoting = clusterDesc("etcd_operator_cluster_members_voting",
		"Voting members in etcd's member list, as status last listed them.")
	descLearners = clusterDesc("etcd_operator_cluster_members_learners",
		"Learners (non-voting members catching up) in etcd's member list, as status last listed them.")
	descCurrent = clusterDesc("etcd_operator_cluster_members_current",
		"Members whose pod is built from the current spec (version and pod template); below members_desired while a rollout has members left to roll.")
	descMargin = clusterDesc("etcd_operator_cluster_quorum_margin",
		"Ready voting members beyond the majority of the voting members: how many more may fail before quorum is lost; negative when it is lost. Absent while no member is listed.")
	descCondition = clusterDesc("etcd_operator_cluster_condition",
		"1 when the condition of this type is True with this reason, 0 when it is False or Unknown; reason is Other for a reason this operator does not know.",
		"type", "reason")
	descCertExpiry = clusterDesc("etcd_operator_cluster_certificate_expiry_timestamp_seconds",
		"When a certificate of the cluster expires (status.tls), as a Unix time: the CA peers trust (peer-ca), the CA the client port trusts (client-ca), the first of the members' certificates (leaf).",
		"certificate")
	descLastBackup = clusterDesc("etcd_operator_cluster_last_successful_backup_timestamp_seconds",
		"When the newest Succeeded EtcdBackup of the cluster completed, as a Unix time. Absent while none has.")
	descActions = clusterDesc("etcd_operator_cluster_actions_total",
		"Actions this operator's leader carried out on the cluster since it started leading, by kind.", "action")
	descReplacements = clusterDesc("etcd_operator_cluster_member_replacements_total",
		"Members this operator's leader removed to add them again under their name (data gone, crash loop) since it started leading.")
	descLastPass = clusterDesc("etcd_operator_cluster_last_successful_pass_timestamp_seconds",
		"When the last pass over the cluster that returned no error ended, as a Unix time. Absent until the first since this replica leads.")

	// The etcd clients are counted over every cluster, with no label: their number is the
	// operator's cost, not a cluster's state.
	descClientsOpened = prometheus.NewDesc("etcd_operator_etcd_clients_opened_total",
		"etcd clients the cluster loops opened to their members since this replica started leading. A client is kept from one pass to the next: "+
			"a new one is opened when a member's address, the client port's TLS or the client certificate changes, and for an action's members; an idle cluster opens none.", nil, nil)
	descClientsOpen = prometheus.NewDesc("etcd_operator_etcd_clients_open",
		"etcd clients the cluster loops keep open, each with its connections to its members; closed when a pass no longer asks for them or the cluster's loop ends.", nil, nil)

	scheduleLabels   = []string{"namespace", "name", "cluster"}
	descScheduleLast = prometheus.NewDesc("etcd_operator_backup_schedule_last_schedule_timestamp_seconds",
		"The scheduled time of the last EtcdBackup the schedule created, as a Unix time. Absent before the first.", scheduleLabels, nil)
	descScheduleSuccess = prometheus.NewDesc("etcd_operator_backup_schedule_last_success_timestamp_seconds",
		"When the newest Succeeded backup of the schedule completed, as a Unix time; 0 while none has.", scheduleLabels, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDesired, descReady, descVoting, descLearners, descCurrent,
		descMargin, descCondition, descCertExpiry, descLastBackup, descActions, descReplacements,
		descLastPass, descClientsOpened, descClientsOpen, descScheduleLast, descScheduleSuccess} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one set of series per EtcdCluster in the cache,
// and one per EtcdBackupSchedule.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	src := c.source()
	if src == nil {
		return
	}
	clusters, err := src.Clusters.List(labels.Everything())
	if err != nil {
		return
	}
	lastBackups := src.lastBackups()
	for _, cl := range clusters {
		k := key{cl.Namespace, cl.Name}
		collectStatus(ch, cl)
		if t, ok := lastBackups[k]; ok {
			ch <- gauge(descLastBackup, float64(t), k.namespace, k.name)
		}
		collectCounters(ch, src.Counters, k)
	}
	if src.Counters != nil {
		opened, closed := src.Counters.etcdClients()
		ch <- prometheus.MustNewConstMetric(descClientsOpened, prometheus.CounterValue, float64(opened))
		ch <- gauge(descClientsOpen, float64(opened-closed))
	}
	src.collectSchedules(ch)
}

// gauge is a constant gauge of desc; labels are the label values in desc's order.
func gauge(desc *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
}

// collectStatus exports what the cluster's spec and status say.
func collectStatus(ch chan<- prometheus.Metric, cl *api.EtcdCluster) {
	ns, name := cl.Namespace, cl.Name
	ch <- gauge(descDesired, float64(cl.Spec.Size), ns, name)
	ch <- gauge(descReady, float64(cl.Status.ReadyMembers), ns, name)
	var voting, learners, current int
	for _, m := range cl.Status.Members {
		if m.Learner {
			learners++
		} else {
			voting++
		}
		if m.PodCurrent {
			current++
		}
	}
	ch <- gauge(descVoting, float64(voting), ns, name)
	ch <- gauge(descLearners, float64(learners), ns, name)
	ch <- gauge(descCurrent, float64(current), ns, name)
	if voting > 0 {
		ch <- gauge(descMargin, float64(int(cl.Status.ReadyMembers)-(voting/2+1)), ns, name)
	}
	for _, cond := range cl.Status.Conditions {
		typ := bounded(cond.Type, conditionTypes)
		if typ == otherValue {
			continue
		}
		v := 0.0
		if cond.Status == metav1.ConditionTrue {
			v = 1
		}
		ch <- gauge(descCondition, v, ns, name, typ, bounded(cond.Reason, conditionReasons))
	}
	if tls := cl.Status.TLS; tls != nil {
		for cert, t := range map[string]*metav1.Time{certPeerCA: tls.PeerCAExpiry, certClientCA: tls.ClientCAExpiry, certLeaf: tls.LeafExpiry} {
			if t != nil {
				ch <- gauge(descCertExpiry, float64(t.Unix()), ns, name, cert)
			}
		}
	}
}

// collectCounters exports what the cluster's loop counted: every action kind, zero until the
// first, the replacements, and the last successful pass once there is one.
func collectCounters(ch chan<- prometheus.Metric, counters *Counters, k key) {
	var got counts
	if counters != nil {
		got, _ = counters.get(k.namespace, k.name)
	}
	for _, kind := range actionKinds {
		ch <- prometheus.MustNewConstMetric(descActions, prometheus.CounterValue, float64(got.actions[kind]), k.namespace, k.name, string(kind))
	}
	for kind, n := range got.actions {
		if bounded(string(kind), actionKinds) == otherValue {
			// An action kind added to the planner but not to actionKinds yet (enums_test.go
			// catches it): still counted, under its own typed name.
			ch <- prometheus.MustNewConstMetric(descActions, prometheus.CounterValue, float64(n), k.namespace, k.name, string(kind))
		}
	}
	ch <- prometheus.MustNewConstMetric(descReplacements, prometheus.CounterValue, float64(got.replacements), k.namespace, k.name)
	if !got.lastPass.IsZero() {
		ch <- gauge(descLastPass, float64(got.lastPass.UnixMilli())/1000, k.namespace, k.name)
	}
}

// lastBackups is, by cluster, the completion time (Unix seconds) of its newest Succeeded
// EtcdBackup.
func (s *Source) lastBackups() map[key]int64 {
	out := map[key]int64{}
	if s.Backups == nil {
		return out
	}
	backups, err := s.Backups.List(labels.Everything())
	if err != nil {
		return out
	}
	for _, b := range backups {
		if b.Status.Phase != api.BackupSucceeded || b.Status.CompletionTime == nil {
			continue
		}
		k := key{b.Namespace, b.Spec.ClusterName}
		if t := b.Status.CompletionTime.Unix(); t > out[k] {
			out[k] = t
		}
	}
	return out
}

// collectSchedules exports, for each backup schedule, its last scheduled time and when its
// newest successful backup completed.
func (s *Source) collectSchedules(ch chan<- prometheus.Metric) {
	if s.Schedules == nil {
		return
	}
	schedules, err := s.Schedules.List(labels.Everything())
	if err != nil {
		return
	}
	for _, sc := range schedules {
		lbl := []string{sc.Namespace, sc.Name, sc.Spec.BackupTemplate.ClusterName}
		if t := sc.Status.LastScheduleTime; t != nil {
			ch <- gauge(descScheduleLast, float64(t.Unix()), lbl...)
		}
		success := 0.0
		if t := sc.Status.LastSuccessfulTime; t != nil {
			success = float64(t.Unix())
		}
		ch <- gauge(descScheduleSuccess, success, lbl...)
	}
}
