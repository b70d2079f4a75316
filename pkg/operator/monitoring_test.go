package operator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	// etcd's server packages register etcd's metrics with the default registry when loaded;
	// the embedded etcd of the tests loads them.
	_ "github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// monitoringDir holds the alert rules and the dashboards.
const monitoringDir = "../../deploy/monitoring"

// etcdMetricsUsed are the metrics of etcd's own that the rules and dashboards read. Each must be
// one etcd exports (checked against the etcd this module builds); a member of another etcd
// release the operator runs (3.5 to 3.7) exports them too.
var etcdMetricsUsed = []string{
	"etcd_disk_backend_commit_duration_seconds",
	"etcd_disk_wal_fsync_duration_seconds",
	"etcd_mvcc_db_total_size_in_bytes",
	"etcd_mvcc_db_total_size_in_use_in_bytes",
	"etcd_network_peer_received_bytes_total",
	"etcd_network_peer_sent_bytes_total",
	"etcd_server_has_leader",
	"etcd_server_leader_changes_seen_total",
	"etcd_server_proposals_committed_total",
	"etcd_server_proposals_failed_total",
	"etcd_server_proposals_pending",
	"etcd_server_quota_backend_bytes",
}

// describedNames are the names of every metric c describes.
func describedNames(c prometheus.Collector) map[string]bool {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	out := map[string]bool{}
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// monitoringExprs are the PromQL expressions of the alert rules and of the dashboards' panels
// and variables, by where they are.
func monitoringExprs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	b, err := os.ReadFile(filepath.Join(monitoringDir, "alerts.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert] = r.Expr
		}
	}
	dashboards, _ := filepath.Glob(filepath.Join(monitoringDir, "dashboards", "*.json"))
	if len(dashboards) != 2 {
		t.Fatalf("dashboards %v, want the operator's and the cluster's", dashboards)
	}
	for _, path := range dashboards {
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Name       string `json:"name"`
					Definition string `json:"definition"`
				} `json:"list"`
			} `json:"templating"`
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, p := range d.Panels {
			for i, target := range p.Targets {
				out[filepath.Base(path)+" panel "+p.Title+" #"+string(rune('A'+i))] = target.Expr
			}
		}
		for _, v := range d.Templating.List {
			out[filepath.Base(path)+" variable "+v.Name] = v.Definition
		}
	}
	return out
}

// Every metric an alert or a dashboard reads is one the operator exports or one of etcd's,
// and etcd's are ones etcd exports: a renamed metric fails here, not in a silent panel.
func TestMonitoringNamesExportedMetrics(t *testing.T) {
	reg := newOperatorRegistry()
	if _, err := newMetrics(reg); err != nil {
		t.Fatal(err)
	}
	operator := describedNames(reg)
	etcd := describedNames(prometheus.DefaultRegisterer.(prometheus.Collector))
	for _, name := range etcdMetricsUsed {
		if !etcd[name] {
			t.Errorf("etcdMetricsUsed names %s, which etcd does not export", name)
		}
	}
	metricName := regexp.MustCompile(`\b(?:etcd|workqueue|process|go)_[a-zA-Z0-9_]+`)
	exported := func(name string) bool {
		base := name
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			base = strings.TrimSuffix(base, suffix)
		}
		return operator[name] || operator[base] ||
			slices.Contains(etcdMetricsUsed, name) || slices.Contains(etcdMetricsUsed, base)
	}
	exprs := monitoringExprs(t)
	for where, expr := range exprs {
		names := metricName.FindAllString(expr, -1)
		if len(names) == 0 && !strings.Contains(where, "variable datasource") {
			t.Errorf("%s: no metric in %q", where, expr)
		}
		for _, name := range names {
			if !exported(name) {
				t.Errorf("%s reads %s, which neither the operator nor etcdMetricsUsed names", where, name)
			}
		}
	}
}
