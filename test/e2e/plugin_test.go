//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// kubectl etcd, the plugin (docs/plugin.md), as a user runs it: kubectl finds kubectl-etcd on
// PATH (make e2e builds bin/kubectl-etcd and puts bin/ first on PATH) and passes it the rest of
// the command line.

// pluginRoles are the members of a kubectl etcd status page by name, with their roles.
func pluginRoles(t *testing.T, out string) map[string]string {
	t.Helper()
	_, table, ok := strings.Cut(out, "\nMembers:\n")
	if !ok {
		t.Fatalf("kubectl etcd status printed no member table:\n%s", out)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	roleAt := strings.Index(lines[0], "ROLE")
	roles := map[string]string{}
	for _, l := range lines[1:] {
		if len(l) > roleAt {
			roles[strings.Fields(l)[0]] = strings.Fields(l[roleAt:])[0]
		}
	}
	return roles
}

func leaderOf(roles map[string]string) string {
	for name, role := range roles {
		if role == "leader" {
			return name
		}
	}
	return ""
}

// restrictedKubeconfig is a kubeconfig of the suite's API server for the ServiceAccount sa of the
// test namespace, with a token of thirty minutes, in a file of the test's own (the token reaches
// no log or command line).
func restrictedKubeconfig(t *testing.T, f *framework.Framework, sa string) string {
	t.Helper()
	server := f.MustKubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
	ca := f.MustKubectl("config", "view", "--raw", "--minify", "--flatten", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}")
	token := strings.TrimSpace(f.MustNS("create", "token", sa, "--duration=30m"))
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: suite\n  cluster:\n    server: " + server +
		"\n    certificate-authority-data: " + ca + "\nusers:\n- name: " + sa + "\n  user:\n    token: " + token +
		"\ncontexts:\n- name: " + sa + "\n  context: {cluster: suite, user: " + sa + ", namespace: " + f.Namespace + "}\ncurrent-context: " + sa + "\n"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKubectlPlugin: on a three-member cluster with client TLS, reached only through
// port-forwards with the cluster's client certificate, kubectl etcd's status shows three
// members and one leader; move-leader hands leadership to another member, as status then
// shows; defrag goes through the three, the leader last; alarm list shows none; compact
// compacts. Then, as a ServiceAccount given only example/kubectl-etcd-role.yaml: status, a
// backup to a claim followed to Succeeded, and a restore of it into a new one-member cluster
// followed to Available.
func TestKubectlPlugin(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	bin, err := exec.LookPath("kubectl-etcd")
	if err != nil {
		t.Fatal("kubectl-etcd is not on PATH: make e2e builds it (make plugin) and puts bin/ first on PATH")
	}
	t.Logf("kubectl etcd runs %s", bin)
	const name = "plug"
	f.Apply(strings.SplitN(exampleFile(t, "etcdbackup-volume.yaml"), "---", 2)[0])
	f.Apply(clusterManifest(name, "  size: 3\n  tls: {peer: {}, client: {}}\n"))
	f.WaitClusterInSpec(name, 3, 4*time.Minute)

	etcd := func(args ...string) string {
		t.Helper()
		out, err := f.KubectlFor(5*time.Minute, append([]string{"etcd", "-n", f.Namespace}, args...)...)
		if err != nil {
			t.Fatalf("kubectl etcd %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	out := etcd("status", name)
	roles := pluginRoles(t, out)
	before := leaderOf(roles)
	leaders := 0
	for _, role := range roles {
		if role == "leader" {
			leaders++
		}
	}
	if len(roles) != 3 || leaders != 1 {
		t.Fatalf("kubectl etcd status: members %v, want three with one leader:\n%s", roles, out)
	}

	out = etcd("move-leader", name)
	m := regexp.MustCompile(`leadership moved from (\S+) to (\S+)`).FindStringSubmatch(out)
	if m == nil || m[1] != before || m[2] == before {
		t.Fatalf("kubectl etcd move-leader: %q, want leadership moved from %s", out, before)
	}
	if now := leaderOf(pluginRoles(t, etcd("status", name))); now != m[2] {
		t.Errorf("after move-leader to %s, status shows %q leading", m[2], now)
	}

	out = etcd("defrag", name)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "(leader)") || !strings.HasPrefix(lines[2], "[3/3] "+m[2]+" ") {
		t.Errorf("kubectl etcd defrag: want three lines, the leader %s last:\n%s", m[2], out)
	}

	if out := etcd("alarm", "list", name); out != "" {
		t.Errorf("kubectl etcd alarm list: %q, want no alarm", out)
	}
	if out := etcd("compact", name); !strings.HasPrefix(out, "compacted etcdcluster "+name+" to revision ") {
		t.Errorf("kubectl etcd compact: %q", out)
	}

	// As a user with the documented Role and nothing else.
	f.MustNS("create", "serviceaccount", "etcd-user")
	f.ApplyFile("../../example/kubectl-etcd-role.yaml")
	f.MustNS("create", "rolebinding", "kubectl-etcd", "--role=kubectl-etcd", "--serviceaccount="+f.Namespace+":etcd-user")
	kubeconfig := restrictedKubeconfig(t, f, "etcd-user")
	asUser := func(args ...string) string {
		t.Helper()
		return etcd(append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}
	if roles := pluginRoles(t, asUser("status", name)); len(roles) != 3 {
		t.Errorf("kubectl etcd status as etcd-user: members %v", roles)
	}
	out = asUser("backup", name, "--to", "etcd-backups:plug/", "--name", "plug-backup")
	if !regexp.MustCompile(`(?m)^etcdbackup/plug-backup: Succeeded: revision \d+, .* at plug/\S+\.db \(`).MatchString(out) {
		t.Fatalf("kubectl etcd backup: want a Succeeded line with the file:\n%s", out)
	}
	var b etcdBackup
	if err := f.GetJSON("etcdbackup/plug-backup", &b); err != nil || b.Status.Phase != "Succeeded" {
		t.Fatalf("etcdbackup plug-backup: %+v, %v", b.Status, err)
	}

	out = asUser("restore", "plug-restored", "--from-backup", "plug-backup", "--size", "1")
	if !strings.Contains(out, "etcdcluster/plug-restored: ") || !strings.Contains(out, "Available") {
		t.Fatalf("kubectl etcd restore: want it followed to Available:\n%s", out)
	}
	if roles := pluginRoles(t, etcd("status", "plug-restored")); len(roles) != 1 || roles["plug-restored-0"] != "leader" {
		t.Errorf("the restored cluster: members %v, want plug-restored-0 leading", roles)
	}
}
