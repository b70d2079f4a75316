package clustermetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	etcdlisters "github.com/etcd-operator/etcd-operator/pkg/generated/listers/etcd/v1alpha1"
)

// The text no series may carry: a condition's message and the Secrets' names.
const (
	secretMessage = "etcd says: password=hunter2"
	secretName    = "db-root-credentials"
)

// t0 is 1893553445 in Unix seconds, as the expected series say.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(t0.Add(d)); return &t }

// fixture is a Collector over indexers the test fills as informers would.
type fixture struct {
	clusters, backups, schedules cache.Indexer
	counters                     *Counters
	collector                    *Collector
}

func newFixture() *fixture {
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	f := &fixture{clusters: idx(), backups: idx(), schedules: idx(), counters: NewCounters(), collector: NewCollector()}
	f.collector.SetSource(&Source{
		Clusters:  etcdlisters.NewEtcdClusterLister(f.clusters),
		Backups:   etcdlisters.NewEtcdBackupLister(f.backups),
		Schedules: etcdlisters.NewEtcdBackupScheduleLister(f.schedules),
		Counters:  f.counters,
	})
	return f
}

// rollingCluster is ns/demo asked for 5 members: 3 voters (2 on the current spec, 2 ready)
// and a learner; Degraded with a message that names a Secret, a reason of a newer operator
// on Progressing, and its certificates' expiries.
func rollingCluster() *api.EtcdCluster {
	c := &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo"}}
	c.Spec.Size = 5
	c.Spec.TLS = &api.TLSSpec{Peer: &api.TLSSource{SecretName: secretName}}
	c.Status.ReadyMembers = 2
	c.Status.Members = []api.MemberStatus{
		{Name: "demo-0", Ready: true, PodCurrent: true},
		{Name: "demo-1", Ready: true, PodCurrent: true},
		{Name: "demo-2"},
		{Name: "demo-3", Learner: true, PodCurrent: true},
	}
	c.Status.Conditions = []metav1.Condition{
		{Type: "Available", Status: metav1.ConditionTrue, Reason: "QuorumHealthy", Message: secretMessage},
		{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "SomethingNewer"},
		{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "AsExpected"},
	}
	c.Status.TLS = &api.TLSStatus{ClientSecretName: secretName, PeerCAExpiry: at(1000 * time.Hour), LeafExpiry: at(10 * time.Hour)}
	return c
}

func backup(name, cluster string, phase api.BackupPhase, done *metav1.Time) *api.EtcdBackup {
	b := &api.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	b.Spec.ClusterName = cluster
	b.Status.Phase, b.Status.CompletionTime = phase, done
	return b
}

// What status says of a cluster, its newest Succeeded backup and what its loop counted are
// exported under the cluster's namespace and name.
func TestCollectorExportsACluster(t *testing.T) {
	f := newFixture()
	_ = f.clusters.Add(rollingCluster())
	for _, b := range []*api.EtcdBackup{
		backup("old", "demo", api.BackupSucceeded, at(time.Hour)),
		backup("new", "demo", api.BackupSucceeded, at(2*time.Hour)),
		backup("failed", "demo", api.BackupFailed, at(3*time.Hour)),
		backup("other", "other", api.BackupSucceeded, at(4*time.Hour)),
	} {
		_ = f.backups.Add(b)
	}
	f.counters.ActionTaken("ns", "demo", plan.ActionCreatePod)
	f.counters.ActionTaken("ns", "demo", plan.ActionCreatePod)
	f.counters.ActionTaken("ns", "demo", plan.ActionRemoveMember)
	f.counters.MemberReplaced("ns", "demo")
	f.counters.PassSucceeded("ns", "demo", t0.Add(500*time.Millisecond))

	want := `
# HELP etcd_operator_cluster_members_desired Members the cluster's spec asks for (spec.size).
# TYPE etcd_operator_cluster_members_desired gauge
etcd_operator_cluster_members_desired{name="demo",namespace="ns"} 5
# HELP etcd_operator_cluster_members_ready Members that are started, healthy and voting (status.readyMembers).
# TYPE etcd_operator_cluster_members_ready gauge
etcd_operator_cluster_members_ready{name="demo",namespace="ns"} 2
# HELP etcd_operator_cluster_members_voting Voting members in etcd's member list, as status last listed them.
# TYPE etcd_operator_cluster_members_voting gauge
etcd_operator_cluster_members_voting{name="demo",namespace="ns"} 3
# HELP etcd_operator_cluster_members_learners Learners (non-voting members catching up) in etcd's member list, as status last listed them.
# TYPE etcd_operator_cluster_members_learners gauge
etcd_operator_cluster_members_learners{name="demo",namespace="ns"} 1
# HELP etcd_operator_cluster_members_current Members whose pod is built from the current spec (version and pod template); below members_desired while a rollout has members left to roll.
# TYPE etcd_operator_cluster_members_current gauge
etcd_operator_cluster_members_current{name="demo",namespace="ns"} 3
# HELP etcd_operator_cluster_quorum_margin Ready voting members beyond the majority of the voting members: how many more may fail before quorum is lost; negative when it is lost. Absent while no member is listed.
# TYPE etcd_operator_cluster_quorum_margin gauge
etcd_operator_cluster_quorum_margin{name="demo",namespace="ns"} 0
# HELP etcd_operator_cluster_condition 1 when the condition of this type is True with this reason, 0 when it is False or Unknown; reason is Other for a reason this operator does not know.
# TYPE etcd_operator_cluster_condition gauge
etcd_operator_cluster_condition{name="demo",namespace="ns",reason="AsExpected",type="Degraded"} 0
etcd_operator_cluster_condition{name="demo",namespace="ns",reason="Other",type="Progressing"} 1
etcd_operator_cluster_condition{name="demo",namespace="ns",reason="QuorumHealthy",type="Available"} 1
# HELP etcd_operator_cluster_certificate_expiry_timestamp_seconds When a certificate of the cluster expires (status.tls), as a Unix time: the CA peers trust (peer-ca), the CA the client port trusts (client-ca), the first of the members' certificates (leaf).
# TYPE etcd_operator_cluster_certificate_expiry_timestamp_seconds gauge
etcd_operator_cluster_certificate_expiry_timestamp_seconds{certificate="leaf",name="demo",namespace="ns"} 1.893589445e+09
etcd_operator_cluster_certificate_expiry_timestamp_seconds{certificate="peer-ca",name="demo",namespace="ns"} 1.897153445e+09
# HELP etcd_operator_cluster_last_successful_backup_timestamp_seconds When the newest Succeeded EtcdBackup of the cluster completed, as a Unix time. Absent while none has.
# TYPE etcd_operator_cluster_last_successful_backup_timestamp_seconds gauge
etcd_operator_cluster_last_successful_backup_timestamp_seconds{name="demo",namespace="ns"} 1.893560645e+09
# HELP etcd_operator_cluster_member_replacements_total Members this operator's leader removed to add them again under their name (data gone, crash loop) since it started leading.
# TYPE etcd_operator_cluster_member_replacements_total counter
etcd_operator_cluster_member_replacements_total{name="demo",namespace="ns"} 1
# HELP etcd_operator_cluster_last_successful_pass_timestamp_seconds When the last pass over the cluster that returned no error ended, as a Unix time. Absent until the first since this replica leads.
# TYPE etcd_operator_cluster_last_successful_pass_timestamp_seconds gauge
etcd_operator_cluster_last_successful_pass_timestamp_seconds{name="demo",namespace="ns"} 1.8935534455e+09
`
	names := []string{
		"etcd_operator_cluster_members_desired", "etcd_operator_cluster_members_ready",
		"etcd_operator_cluster_members_voting", "etcd_operator_cluster_members_learners",
		"etcd_operator_cluster_members_current", "etcd_operator_cluster_quorum_margin",
		"etcd_operator_cluster_condition", "etcd_operator_cluster_certificate_expiry_timestamp_seconds",
		"etcd_operator_cluster_last_successful_backup_timestamp_seconds",
		"etcd_operator_cluster_member_replacements_total", "etcd_operator_cluster_last_successful_pass_timestamp_seconds",
	}
	if err := testutil.CollectAndCompare(f.collector, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	actions := map[string]float64{}
	for _, m := range gather(t, f.collector)["etcd_operator_cluster_actions_total"] {
		actions[label(m, "action")] = m.GetCounter().GetValue()
	}
	if len(actions) != len(actionKinds) || actions["CreatePod"] != 2 || actions["RemoveMember"] != 1 || actions["MoveLeader"] != 0 {
		t.Errorf("actions %v, want every kind, CreatePod 2, RemoveMember 1, the others 0", actions)
	}
}

// A cluster's series go with it from the cache, its counters included, before its loop has
// even ended; a replica that does not lead exports none.
func TestCollectorForgetsDeletedClusters(t *testing.T) {
	f := newFixture()
	c := rollingCluster()
	other := rollingCluster()
	other.Name = "other"
	_ = f.clusters.Add(c)
	_ = f.clusters.Add(other)
	_ = f.backups.Add(backup("b", "demo", api.BackupSucceeded, at(time.Hour)))
	f.counters.ActionTaken("ns", "demo", plan.ActionCreatePod)
	f.counters.PassSucceeded("ns", "demo", t0)
	if n := seriesOf(t, f.collector, "demo"); n == 0 {
		t.Fatal("no series of ns/demo while it exists")
	}
	_ = f.clusters.Delete(c)
	if n := seriesOf(t, f.collector, "demo"); n != 0 {
		t.Errorf("%d series of ns/demo after it was deleted, want none", n)
	}
	if n := seriesOf(t, f.collector, "other"); n == 0 {
		t.Error("the other cluster's series went too")
	}
	f.collector.SetSource(nil)
	if n := testutil.CollectAndCount(f.collector); n != 0 {
		t.Errorf("%d series without a source, want none", n)
	}
}

// Labels are the cluster's namespace and name and closed sets: never a message, never a
// Secret's name, never a reason the operator does not know.
func TestCollectorLabelsAreBounded(t *testing.T) {
	f := newFixture()
	_ = f.clusters.Add(rollingCluster())
	sc := &api.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly"}}
	sc.Spec.BackupTemplate.ClusterName = "demo"
	sc.Status.LastScheduleTime = at(time.Hour)
	_ = f.schedules.Add(sc)
	f.counters.ActionTaken("ns", "demo", plan.ActionCreatePod)
	closed := map[string][]string{
		"namespace": {"ns"}, "name": {"demo", "nightly"}, "cluster": {"demo"},
		"type": strs(conditionTypes), "reason": append(strs(conditionReasons), otherValue),
		"action": strs(actionKinds), "certificate": {certPeerCA, certClientCA, certLeaf},
	}
	for name, ms := range gather(t, f.collector) {
		for _, m := range ms {
			for _, lp := range m.GetLabel() {
				allowed, ok := closed[lp.GetName()]
				if !ok || !contains(allowed, lp.GetValue()) {
					t.Errorf("%s: label %s=%q is not one of a closed set", name, lp.GetName(), lp.GetValue())
				}
			}
		}
	}
	if problems, err := testutil.CollectAndLint(f.collector); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// A schedule exports its last scheduled time and its last success, 0 before the first, so
// that an alert can compare them.
func TestCollectorExportsSchedules(t *testing.T) {
	f := newFixture()
	sc := &api.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly"}}
	sc.Spec.BackupTemplate.ClusterName = "demo"
	sc.Status.LastScheduleTime = at(0)
	_ = f.schedules.Add(sc)
	want := `
# HELP etcd_operator_backup_schedule_last_schedule_timestamp_seconds The scheduled time of the last EtcdBackup the schedule created, as a Unix time. Absent before the first.
# TYPE etcd_operator_backup_schedule_last_schedule_timestamp_seconds gauge
etcd_operator_backup_schedule_last_schedule_timestamp_seconds{cluster="demo",name="nightly",namespace="ns"} 1.893553445e+09
# HELP etcd_operator_backup_schedule_last_success_timestamp_seconds When the newest Succeeded backup of the schedule completed, as a Unix time; 0 while none has.
# TYPE etcd_operator_backup_schedule_last_success_timestamp_seconds gauge
etcd_operator_backup_schedule_last_success_timestamp_seconds{cluster="demo",name="nightly",namespace="ns"} 0
`
	if err := testutil.CollectAndCompare(f.collector, strings.NewReader(want),
		"etcd_operator_backup_schedule_last_schedule_timestamp_seconds", "etcd_operator_backup_schedule_last_success_timestamp_seconds"); err != nil {
		t.Error(err)
	}
}

// Forget drops a cluster's counts: a cluster of the same name made again starts from zero.
func TestCountersForget(t *testing.T) {
	c := NewCounters()
	c.ActionTaken("ns", "demo", plan.ActionCreatePod)
	c.MemberReplaced("ns", "demo")
	c.Forget("ns", "demo")
	if got, ok := c.get("ns", "demo"); ok {
		t.Errorf("counts %+v after Forget, want none", got)
	}
}

// The etcd clients opened and open are the operator's, over every cluster: one series each,
// without labels, and a cluster forgotten takes nothing of them with it.
func TestCollectorExportsEtcdClients(t *testing.T) {
	f := newFixture()
	for range 3 {
		f.counters.EtcdClientOpened("ns", "demo")
	}
	f.counters.EtcdClientOpened("ns", "other")
	f.counters.EtcdClientClosed("ns", "demo")
	f.counters.Forget("ns", "other")
	got := gather(t, f.collector)
	for name, want := range map[string]float64{"etcd_operator_etcd_clients_opened_total": 4, "etcd_operator_etcd_clients_open": 3} {
		ms := got[name]
		if len(ms) != 1 || len(ms[0].GetLabel()) != 0 {
			t.Errorf("%s: %v, want one series without labels", name, ms)
			continue
		}
		if v := ms[0].GetCounter().GetValue() + ms[0].GetGauge().GetValue(); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
}

// gather collects c into a registry of its own and returns its series by metric name.
func gather(t *testing.T, c prometheus.Collector) map[string][]*dto.Metric {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.GetMetric()
	}
	return out
}

// seriesOf counts the series whose name label is name.
func seriesOf(t *testing.T, c prometheus.Collector, name string) int {
	n := 0
	for _, ms := range gather(t, c) {
		for _, m := range ms {
			if label(m, "name") == name {
				n++
			}
		}
	}
	return n
}

func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

func strs[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

func contains(set []string, v string) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}
