//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// docs/monitoring.md, live: a Prometheus on the host, started by the test, scrapes with
// deploy/monitoring/prometheus.yml and alerts with deploy/monitoring/alerts.rules.yaml. It is
// bin/prometheus (make prometheus, which make e2e runs beside the suite): deploy/monitoring/prometheus.yml
// discovers pods through Kubernetes, which Debian's prometheus package is built without.

// prometheusBin is make prometheus' build, from the package's folder (test/e2e).
const prometheusBin = "../../bin/prometheus"

// make e2e builds Prometheus beside the suite (a cold machine's build takes minutes, and the
// alert test is the only one that needs it): E2E_PROMETHEUS_BUILD names the build's files,
// PREFIX.rc (its exit code, written when it ends) and PREFIX.log. promBuildBound bounds the
// wait: a cold build on two cores that share the suite.
const promBuildBound = 20 * time.Minute

// waitPrometheusBuilt waits for make e2e's build of Prometheus to end, when it runs one, and
// fails the test with the build's log when it failed.
func waitPrometheusBuilt(t *testing.T) {
	t.Helper()
	prefix := os.Getenv("E2E_PROMETHEUS_BUILD")
	if prefix == "" {
		return
	}
	var rc []byte
	err := framework.Poll(promBuildBound, func() (bool, error) {
		var err error
		rc, err = os.ReadFile(prefix + ".rc")
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("make e2e's build of Prometheus did not end within %s (log %s.log): %v", promBuildBound, prefix, err)
	}
	if code := strings.TrimSpace(string(rc)); code != "0" {
		log, _ := os.ReadFile(prefix + ".log")
		t.Fatalf("make e2e's build of Prometheus failed (exit code %s):\n%s", code, log)
	}
}

// Outside the cluster, Prometheus finds the API server through the suite's kubeconfig. The
// test's copy of the rules is evaluated every ruleInterval, and each alert's `for:` is
// ruleFor: the production durations (10 minutes for EtcdClusterDegraded) would only make the
// test longer.
const (
	ruleInterval = "5s"
	ruleFor      = "30s"
)

// hostPrometheusConfig is deploy/monitoring/prometheus.yml with, as its one change, the
// suite's kubeconfig as kubeconfig_file of each kubernetes_sd_configs entry: what a Prometheus
// outside the cluster needs in place of the in-cluster configuration.
func hostPrometheusConfig(t *testing.T, kubeconfig string) []byte {
	t.Helper()
	var cfg map[string]any
	readYAML(t, "../../deploy/monitoring/prometheus.yml", &cfg)
	jobs, _ := cfg["scrape_configs"].([]any)
	for _, j := range jobs {
		job, _ := j.(map[string]any)
		sds, _ := job["kubernetes_sd_configs"].([]any)
		for _, sd := range sds {
			sd.(map[string]any)["kubeconfig_file"] = kubeconfig
		}
		if len(sds) == 0 {
			t.Fatalf("job %v has no kubernetes_sd_configs", job["job_name"])
		}
	}
	return marshalYAML(t, cfg)
}

// testRules is deploy/monitoring/alerts.rules.yaml with each group evaluated every
// ruleInterval and each alert's `for:` set to ruleFor.
func testRules(t *testing.T) []byte {
	t.Helper()
	var rules map[string]any
	readYAML(t, "../../deploy/monitoring/alerts.rules.yaml", &rules)
	groups, _ := rules["groups"].([]any)
	for _, g := range groups {
		group := g.(map[string]any)
		group["interval"] = ruleInterval
		list, _ := group["rules"].([]any)
		for _, r := range list {
			if rule := r.(map[string]any); rule["for"] != nil {
				rule["for"] = ruleFor
			}
		}
	}
	return marshalYAML(t, rules)
}

func readYAML(t *testing.T, path string, out any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, out); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
}

func marshalYAML(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// promServer is a Prometheus the test started.
type promServer struct {
	base string // http://127.0.0.1:PORT
	log  string // its log file
}

// listeningOn is Prometheus' log line naming the address it serves on.
var listeningOn = regexp.MustCompile(`msg="Listening on".* address=(127\.0\.0\.1:[0-9]+)`)

// startPrometheus runs bin/prometheus on 127.0.0.1 (a port of the kernel's choosing, read back
// from its log), with a data folder of the test's own, the documented scrapes
// (hostPrometheusConfig) and the rules (testRules). It is killed at cleanup; its log is
// printed when the test failed.
func startPrometheus(t *testing.T) *promServer {
	t.Helper()
	waitPrometheusBuilt(t)
	bin, err := filepath.Abs(prometheusBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s is not built (%v): make prometheus builds it, make e2e runs it", prometheusBin, err)
	}
	kubeconfig, err := filepath.Abs(os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range map[string][]byte{
		"prometheus.yml": hostPrometheusConfig(t, kubeconfig),
		// prometheus.yml loads the rules from this name, beside it.
		"alerts.rules.yaml": testRules(t),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := &promServer{log: filepath.Join(dir, "prometheus.log")}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("prometheus log:\n%s", b)
		}
	})
	if err := framework.Poll(time.Minute, p.ready); err != nil {
		t.Fatalf("prometheus did not become ready: %v", err)
	}
	return p
}

// ready: Prometheus has said where it listens, and answers there that it is ready.
func (p *promServer) ready() (bool, error) {
	if p.base == "" {
		b, err := os.ReadFile(p.log)
		if err != nil {
			return false, err
		}
		m := listeningOn.FindSubmatch(b)
		if m == nil {
			return false, fmt.Errorf("no %q in its log yet", "Listening on")
		}
		p.base = "http://" + string(m[1])
	}
	resp, err := http.Get(p.base + "/-/ready")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("/-/ready: %s", resp.Status)
	}
	return true, nil
}

// api reads Prometheus' HTTP API at path and decodes its data into out.
func (p *promServer) api(path string, out any) error {
	resp, err := http.Get(p.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &body); err != nil || body.Status != "success" {
		return fmt.Errorf("%s: %s %s (%v)", path, resp.Status, b, err)
	}
	return json.Unmarshal(body.Data, out)
}

// promTarget is one of /api/v1/targets' active targets.
type promTarget struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
}

func (t promTarget) String() string {
	return fmt.Sprintf("%s %s %s %s", t.Labels["job"], t.ScrapeURL, t.Health, t.LastError)
}

// targets are the active targets of job whose labels include want.
func (p *promServer) targets(job string, want map[string]string) ([]promTarget, error) {
	var data struct {
		ActiveTargets []promTarget `json:"activeTargets"`
	}
	if err := p.api("/api/v1/targets?state=active", &data); err != nil {
		return nil, err
	}
	var out []promTarget
	for _, tg := range data.ActiveTargets {
		if tg.Labels["job"] == job && hasLabels(tg.Labels, want) {
			out = append(out, tg)
		}
	}
	return out, nil
}

// alertState is the state of the alert named name whose labels include want: "pending",
// "firing", or "" when there is none.
func (p *promServer) alertState(name string, want map[string]string) (string, error) {
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := p.api("/api/v1/alerts", &data); err != nil {
		return "", err
	}
	for _, a := range data.Alerts {
		if a.Labels["alertname"] == name && hasLabels(a.Labels, want) {
			return a.State, nil
		}
	}
	return "", nil
}

// count is the number of series of an instant query.
func (p *promServer) count(query string) (int, error) {
	var data struct {
		Result []json.RawMessage `json:"result"`
	}
	if err := p.api("/api/v1/query?query="+url.QueryEscape(query), &data); err != nil {
		return 0, err
	}
	return len(data.Result), nil
}

func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestPrometheusAlerts: Prometheus, scraping with the documented configuration, scrapes the
// operator and every member, each member once and none down: a cluster's in plaintext on the
// client port, and those of a cluster with client TLS on the metrics port (their client port
// asks for a client certificate, and is left out). One member of a three-member cluster is
// kept down, the way an exhausted ResourceQuota keeps it (the API server refuses its new pod):
// EtcdClusterDegraded fires, and EtcdInsufficientMembers does not (two of three keep quorum).
// The quota lifted, the member comes back and the alert resolves. No acknowledged write is
// lost meanwhile. Prometheus reaches the pods at their IPs, as from within the cluster: the
// local node routes pod IPs to the host, kind does not.
func TestPrometheusAlerts(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	requireHostReachesPods(t, f)
	p := startPrometheus(t)
	const name, secure = "prom", "promtls"
	f.Apply(clusterManifest(name, "  size: 3\n"))
	f.Apply(clusterManifest(secure, "  size: 1\n  storage: {emptyDir: {}}\n  tls: {client: {}}\n"))
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	f.WaitClusterInSpec(secure, 1, 3*time.Minute)
	checkScraped(t, f, p, name, secure)
	writer := f.StartWriter(name)

	cluster := map[string]string{"namespace": f.Namespace, "name": name}
	release := holdMemberDown(t, f, name+"-2")
	waitCondition(t, f, name, "Degraded", "True", "PodRefused", 2*time.Minute)
	start := time.Now()
	f.Eventually("EtcdClusterDegraded firing", 4*time.Minute, func() (bool, error) {
		state, err := p.alertState("EtcdClusterDegraded", cluster)
		return state == "firing", fmt.Errorf("EtcdClusterDegraded %q (%v)", state, err)
	})
	t.Logf("FIGURE member held down -> EtcdClusterDegraded firing (for: %s): %.1fs", ruleFor, time.Since(start).Seconds())
	if uid := podUID(f, name+"-2"); uid != "" {
		t.Fatalf("pod %s-2 came back while the quota held it down", name)
	}
	if state, err := p.alertState("EtcdInsufficientMembers", cluster); err != nil || state != "" {
		t.Errorf("EtcdInsufficientMembers is %q (%v) with two of three members ready", state, err)
	}

	release()
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	start = time.Now()
	f.Eventually("EtcdClusterDegraded resolved", 3*time.Minute, func() (bool, error) {
		state, err := p.alertState("EtcdClusterDegraded", cluster)
		return err == nil && state == "", fmt.Errorf("EtcdClusterDegraded %q (%v)", state, err)
	})
	t.Logf("FIGURE member back, in spec -> EtcdClusterDegraded resolved: %.1fs", time.Since(start).Seconds())
	writer.StopAndVerify(name + "-0")
	f.CheckAgreement(name, 3)
}

// requireHostReachesPods skips on kind, whose pod IPs the host does not route to.
func requireHostReachesPods(t *testing.T, f *framework.Framework) {
	t.Helper()
	nodes, err := f.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Kind() {
			t.Skip("kind: the host does not reach pod IPs, which Prometheus scrapes from the host")
		}
	}
}

// memberTargets are how many scrape targets a cluster's members have and on which port.
type memberTargets struct {
	n    int
	port string
}

// checkScraped waits until Prometheus scrapes the operator, and each member of the plaintext
// cluster plain on its client port and of the client-TLS cluster secure on its metrics port,
// one target per member, all up; and until the series join as the alerts and dashboards
// expect: the operator's on the clusters' namespace and name (honor_labels), the members' on
// the same.
func checkScraped(t *testing.T, f *framework.Framework, p *promServer, plain, secure string) {
	t.Helper()
	f.Eventually("prometheus scraping the operator and each member once", 3*time.Minute, func() (bool, error) {
		op, err := p.targets("etcd-operator", nil)
		if err != nil {
			return false, err
		}
		if !anyUp(op) {
			return false, fmt.Errorf("no operator target up: %v", op)
		}
		for cluster, want := range map[string]memberTargets{plain: {3, ":2379/"}, secure: {1, ":2381/"}} {
			tgs, err := p.targets("etcd-members", map[string]string{"namespace": f.Namespace, "name": cluster})
			if err != nil {
				return false, err
			}
			if len(tgs) != want.n {
				return false, fmt.Errorf("cluster %s: targets %v, want %d on %s", cluster, tgs, want.n, want.port)
			}
			for _, tg := range tgs {
				if tg.Health != "up" || !strings.Contains(tg.ScrapeURL, want.port) {
					return false, fmt.Errorf("cluster %s: target %v, want up on %s", cluster, tg, want.port)
				}
			}
		}
		for query, want := range map[string]int{
			fmt.Sprintf(`etcd_operator_cluster_members_ready{namespace=%q, name=%q} == 3`, f.Namespace, plain): 1,
			fmt.Sprintf(`etcd_server_has_leader{namespace=%q, name=%q} == 1`, f.Namespace, plain):              3,
			fmt.Sprintf(`etcd_server_has_leader{namespace=%q, name=%q} == 1`, f.Namespace, secure):             1,
		} {
			if n, err := p.count(query); err != nil || n != want {
				return false, fmt.Errorf("%s: %d series (%v), want %d", query, n, err, want)
			}
		}
		return true, nil
	})
}

func anyUp(targets []promTarget) bool {
	for _, tg := range targets {
		if tg.Health == "up" {
			return true
		}
	}
	return false
}

// holdMemberDown keeps the member pod down as an exhausted ResourceQuota would: a quota of
// one pod fewer than the namespace runs, then the pod deleted. The API server refuses the pod
// the operator makes again (Degraded PodRefused), the member's claim and data stay, and the
// other members keep quorum. release lifts the quota; the operator tries again within its
// retry of a refused pod.
func holdMemberDown(t *testing.T, f *framework.Framework, pod string) (release func()) {
	t.Helper()
	pods := strings.Fields(f.MustNS("get", "pods", "--field-selector=status.phase!=Succeeded,status.phase!=Failed", "-o", "name"))
	f.Apply(fmt.Sprintf("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: hold-member\nspec:\n  hard:\n    pods: \"%d\"\n", len(pods)-1))
	f.MustNS("delete", "pod", pod, "--wait=true", "--timeout=60s")
	return func() {
		t.Helper()
		f.MustNS("delete", "resourcequota", "hold-member")
	}
}
