package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// decodeLoose decodes a YAML file into a generic value (the Prometheus operator's kinds have no
// Go types here).
func decodeLoose(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return out
}

// The PrometheusRule's spec is the rules file promtool tests, group for group.
func TestPrometheusRuleIsTheRulesFile(t *testing.T) {
	rules := decodeLoose(t, "monitoring/alerts.rules.yaml")
	pr := decodeLoose(t, "monitoring/prometheusrule.yaml")
	if pr["kind"] != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml is a %v", pr["kind"])
	}
	if !equality.Semantic.DeepEqual(pr["spec"], rules) {
		t.Error("prometheusrule.yaml's spec differs from alerts.rules.yaml: copy the groups of alerts.rules.yaml into it")
	}
}

// monitorSpec is what the tests read of a PodMonitor or ServiceMonitor.
type monitorSpec struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		NamespaceSelector struct {
			Any        bool     `json:"any"`
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path"`
			HonorLabels bool   `json:"honorLabels"`
		} `json:"endpoints"`
		PodMetricsEndpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path"`
			Scheme      string `json:"scheme"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels"`
				TargetLabel  string   `json:"targetLabel"`
			} `json:"relabelings"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// The PodMonitor selects every member pod, in any namespace, and no other pod of a cluster's;
// it scrapes the port each member serves its metrics on in plaintext (the client port without
// client TLS, the metrics port with it), and every series gets the cluster's name. A member
// with client TLS declares its client port too, which the PodMonitor cannot tell from a
// plaintext one: that target is down (docs/monitoring.md).
func TestPodMonitorScrapesEveryMember(t *testing.T) {
	var pm monitorSpec
	decodeFile(t, "monitoring/podmonitor.yaml", &pm)
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if !pm.Spec.NamespaceSelector.Any {
		t.Error("the PodMonitor must look in every namespace")
	}
	scraped := map[string]bool{}
	for _, e := range pm.Spec.PodMetricsEndpoints {
		scraped[e.Port] = true
		if len(e.Relabelings) != 1 || e.Relabelings[0].TargetLabel != "name" ||
			!slices.Equal(e.Relabelings[0].SourceLabels, []string{"__meta_kubernetes_pod_label_etcd_operator_dev_cluster"}) {
			t.Errorf("endpoint %s: relabelings %+v, want name from the cluster label", e.Port, e.Relabelings)
		}
	}
	for _, tc := range []struct {
		tls  *api.TLSSpec
		want []string
	}{
		{nil, []string{"client"}},
		{&api.TLSSpec{Peer: &api.TLSSource{}}, []string{"client"}},
		{&api.TLSSpec{Client: &api.TLSSource{}}, []string{"client", "metrics"}},
	} {
		c := &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db"}}
		c.Spec.TLS = tc.tls
		p := member.Pod(c, member.Template{Ordinal: 0}, "img")
		if !sel.Matches(labels.Set(p.Labels)) {
			t.Errorf("client TLS %v: the PodMonitor does not select member pod labels %v", member.ClientTLS(c), p.Labels)
		}
		var ports []string
		for _, ctr := range p.Spec.Containers {
			if ctr.Name != member.EtcdContainerName {
				continue
			}
			for _, port := range ctr.Ports {
				if scraped[port.Name] {
					ports = append(ports, port.Name)
				}
			}
		}
		if !slices.Equal(ports, tc.want) {
			t.Errorf("client TLS %v: the member pod declares scraped ports %v, want %v", member.ClientTLS(c), ports, tc.want)
		}
	}
	svc := member.ClientService(&api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo"}})
	if sel.Matches(labels.Set(svc.Labels)) {
		t.Error("the PodMonitor's selector matches labels that are not a member's")
	}
}

// The ServiceMonitor scrapes the operator's metrics Service, keeping the cluster's namespace
// and name on the per-cluster series.
func TestServiceMonitorScrapesTheOperator(t *testing.T) {
	var sm monitorSpec
	var svc corev1.Service
	decodeFile(t, "monitoring/servicemonitor.yaml", &sm)
	decodeFile(t, "service.yaml", &svc)
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(svc.Labels)) || !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{svc.Namespace}) {
		t.Errorf("the ServiceMonitor selects %v in %v, not the Service %s/%s", sm.Spec.Selector, sm.Spec.NamespaceSelector.MatchNames, svc.Namespace, svc.Name)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name || !sm.Spec.Endpoints[0].HonorLabels {
		t.Errorf("endpoints %+v, want port %s with honorLabels", sm.Spec.Endpoints, svc.Spec.Ports[0].Name)
	}
}

// The plain scrape config loads the rules file, keeps the per-cluster labels of the
// operator's series, and has both jobs.
func TestPrometheusConfig(t *testing.T) {
	var cfg struct {
		RuleFiles     []string `json:"rule_files"`
		ScrapeConfigs []struct {
			JobName     string `json:"job_name"`
			HonorLabels bool   `json:"honor_labels"`
		} `json:"scrape_configs"`
	}
	b, err := os.ReadFile("monitoring/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.RuleFiles, []string{"alerts.rules.yaml"}) {
		t.Errorf("rule_files %v, want alerts.rules.yaml", cfg.RuleFiles)
	}
	jobs := map[string]bool{}
	for _, sc := range cfg.ScrapeConfigs {
		jobs[sc.JobName] = sc.HonorLabels
	}
	if honor, ok := jobs["etcd-operator"]; !ok || !honor || len(jobs) != 2 {
		t.Errorf("jobs (honor_labels) %v, want etcd-operator with honor_labels and etcd-members", jobs)
	}
	if _, err := os.Stat(filepath.Join("monitoring", "alerts.rules.yaml")); err != nil {
		t.Error(err)
	}
}
