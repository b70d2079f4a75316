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
				Regex        string   `json:"regex"`
				TargetLabel  string   `json:"targetLabel"`
				Action       string   `json:"action"`
			} `json:"relabelings"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// memberPods are member pods of every client mode: a pod serves its client port in
// plaintext, in both plaintext and TLS (while the port moves), or in TLS alone; with peer TLS
// or without.
func memberPods() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, tc := range []struct {
		tls  *api.TLSSpec
		mode member.ClientMode
	}{
		{nil, ""},
		{&api.TLSSpec{Peer: &api.TLSSource{}}, ""},
		{&api.TLSSpec{Client: &api.TLSSource{}}, ""},
		{&api.TLSSpec{Peer: &api.TLSSource{}, Client: &api.TLSSource{}}, ""},
		{&api.TLSSpec{Client: &api.TLSSource{}}, member.ClientDual},
		{&api.TLSSpec{}, member.ClientDual},
		{&api.TLSSpec{}, member.ClientSecure},
	} {
		c := &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db"}}
		c.Spec.TLS = tc.tls
		pods = append(pods, member.Pod(c, member.Template{Ordinal: 1, Client: tc.mode}, "img"))
	}
	return pods
}

// checkOneTarget checks that the targets kept of member pod p are exactly one, on a port where
// its etcd serves metrics in plaintext, with the member's namespace, pod and cluster name.
func checkOneTarget(t *testing.T, p *corev1.Pod, kept []map[string]string) {
	t.Helper()
	plain := plaintextMetricsPorts(p)
	if len(kept) != 1 {
		t.Errorf("member pod serving plaintext metrics on %v: %d targets kept (%s), want 1", plain, len(kept), describe(kept))
		return
	}
	if port := kept[0]["__meta_kubernetes_pod_container_port_number"]; !plain[port] {
		t.Errorf("member pod serving plaintext metrics on %v: the target kept is port %s", plain, port)
	}
	if kept[0]["name"] != "demo" {
		t.Errorf("target labels %v: no name=demo", kept[0])
	}
}

// The PodMonitor selects every member pod, in any namespace, and no other pod of a cluster's.
// Of each member pod it keeps one target: the port that serves etcd's metrics in plaintext
// (the client port without client TLS, the metrics port with it), as the pod's label
// etcd.operator.dev/metrics-port names it; a client port that takes TLS is not scraped.
// Every series gets the cluster's name.
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
	for _, p := range memberPods() {
		if !sel.Matches(labels.Set(p.Labels)) {
			t.Errorf("the PodMonitor does not select member pod labels %v", p.Labels)
		}
		var kept []map[string]string
		for _, e := range pm.Spec.PodMetricsEndpoints {
			var rules []relabelRule
			for _, r := range e.Relabelings {
				rules = append(rules, relabelRule{SourceLabels: r.SourceLabels, Regex: r.Regex, TargetLabel: r.TargetLabel, Action: r.Action})
			}
			// The Prometheus operator keeps the endpoint's port first, then applies its
			// relabelings.
			for _, target := range podTargets(p, "10.0.0.1") {
				if target["__meta_kubernetes_pod_container_port_name"] != e.Port {
					continue
				}
				if out, ok := relabel(t, target, rules); ok {
					kept = append(kept, out)
				}
			}
		}
		checkOneTarget(t, p, kept)
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

// promConfig is what the tests read of prometheus.yml.
type promConfig struct {
	RuleFiles     []string `json:"rule_files"`
	ScrapeConfigs []struct {
		JobName        string `json:"job_name"`
		HonorLabels    bool   `json:"honor_labels"`
		RelabelConfigs []struct {
			SourceLabels []string `json:"source_labels"`
			Separator    string   `json:"separator"`
			Regex        string   `json:"regex"`
			TargetLabel  string   `json:"target_label"`
			Replacement  string   `json:"replacement"`
			Action       string   `json:"action"`
		} `json:"relabel_configs"`
	} `json:"scrape_configs"`
}

// jobRules are the relabel_configs of prometheus.yml's job.
func jobRules(t *testing.T, cfg promConfig, job string) []relabelRule {
	t.Helper()
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName != job {
			continue
		}
		var rules []relabelRule
		for _, r := range sc.RelabelConfigs {
			rules = append(rules, relabelRule{SourceLabels: r.SourceLabels, Separator: r.Separator, Regex: r.Regex,
				TargetLabel: r.TargetLabel, Replacement: r.Replacement, Action: r.Action})
		}
		return rules
	}
	t.Fatalf("prometheus.yml has no job %s", job)
	return nil
}

// The plain scrape config's etcd-members job keeps one target of each member pod, on the port
// that serves etcd's metrics in plaintext, with the member's namespace, pod and cluster name;
// it keeps nothing of a pod that is not a member's.
func TestPrometheusConfigScrapesEachMemberOnce(t *testing.T) {
	var cfg promConfig
	b, err := os.ReadFile("monitoring/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	rules := jobRules(t, cfg, "etcd-members")
	for _, p := range memberPods() {
		var kept []map[string]string
		for _, target := range podTargets(p, "10.0.0.1") {
			if out, ok := relabel(t, target, rules); ok {
				kept = append(kept, out)
			}
		}
		checkOneTarget(t, p, kept)
		if len(kept) == 1 && (kept[0]["namespace"] != p.Namespace || kept[0]["pod"] != p.Name) {
			t.Errorf("target labels %v: want namespace %s, pod %s", kept[0], p.Namespace, p.Name)
		}
		other := p.DeepCopy()
		delete(other.Labels, member.LabelMember)
		for _, target := range podTargets(other, "10.0.0.2") {
			if _, ok := relabel(t, target, rules); ok {
				t.Errorf("a pod without %s is scraped: %v", member.LabelMember, target)
			}
		}
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
