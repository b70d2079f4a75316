//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The chart, charts/etcd-operator, installed, upgraded and uninstalled with helm as a user
// does (make e2e builds bin/helm, make helm, and puts bin/ first on PATH).

// helmRelease is the release's name: its objects then have deploy/'s names.
const helmRelease = "etcd-operator"

// helmRunner runs helm against the suite's cluster (KUBECONFIG), with a home of the test's
// own so that the user's helm configuration plays no part.
type helmRunner struct {
	t    *testing.T
	bin  string
	home string
}

func newHelm(t *testing.T) *helmRunner {
	t.Helper()
	bin, err := exec.LookPath("helm")
	if err != nil {
		t.Fatal("helm is not on PATH: make e2e builds it (make helm) and puts bin/ first on PATH")
	}
	return &helmRunner{t: t, bin: bin, home: t.TempDir()}
}

// run runs helm with args and fails the test on error.
func (h *helmRunner) run(args ...string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"), "HELM_DATA_HOME="+filepath.Join(h.home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		h.t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// suiteImage is the image of the suite's operator, as repository and tag, for the release to
// run the same build.
func suiteImage(t *testing.T, f *framework.Framework) (repository, tag string) {
	t.Helper()
	image := strings.TrimSpace(f.MustKubectl("-n", framework.OperatorNamespace, "get", "deployment", "etcd-operator",
		"-o", "jsonpath={.spec.template.spec.containers[0].image}"))
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") || strings.Contains(image, "@") {
		t.Fatalf("the suite's operator image %q has no tag", image)
	}
	return image[:i], image[i+1:]
}

// leaseHolder is the installation that holds the cluster's Lease (pkg/cluster/installation.go).
func leaseHolder(f *framework.Framework, cluster string) (string, error) {
	out, err := f.NS("get", "lease", cluster+"-operator", "-o", "jsonpath={.spec.holderIdentity}")
	return strings.TrimSpace(out), err
}

// releaseObjects lists the objects Helm made for the release in the test namespace.
func releaseObjects(f *framework.Framework) (string, error) {
	out, err := f.NS("get", "deployment,serviceaccount,role,rolebinding,service",
		"-l", "app.kubernetes.io/managed-by=Helm,app.kubernetes.io/instance="+helmRelease, "-o", "name")
	return strings.TrimSpace(out), err
}

// operatorPods are the release's operator pods by name, with their args.
func operatorPods(f *framework.Framework) (map[string]string, error) {
	out, err := f.NS("get", "pods", "-l", "app.kubernetes.io/name=etcd-operator",
		"-o", `jsonpath={range .items[*]}{.metadata.name}{"\t"}{.spec.containers[0].args}{"\n"}{end}`)
	if err != nil {
		return nil, err
	}
	pods := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, args, ok := strings.Cut(l, "\t"); ok {
			pods[name] = args
		}
	}
	return pods, nil
}

// TestHelmNamespacedRelease installs the chart as a second operator, namespaced, in the test's
// namespace, beside the suite's cluster-wide one, which sees that namespace too. Of two
// installations the one named in a cluster's Lease drives it (docs/install.md, "Two
// installations"): the Lease is made first, naming the release, so the release drives the
// cluster and the suite's operator leaves it alone (its InstallationConflict Warning says so).
// The release's cluster becomes Available; helm upgrade changes a bound, the operator's
// Deployment rolls and the cluster stays Available throughout; helm uninstall removes the
// operator's objects and keeps the cluster, its member, its claim, its data and the CRDs.
// Deleting the Lease then hands the cluster to the suite's operator. One member, about two
// minutes.
func TestHelmNamespacedRelease(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	h := newHelm(t)
	repository, tag := suiteImage(t, f)
	chart := filepath.Join("..", "..", "charts", "etcd-operator")
	const name = "helm"
	installation := f.Namespace + "/" + helmRelease // the release's leader Lease: namespace/name

	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	f.Apply(fmt.Sprintf(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: %s-operator
spec:
  holderIdentity: %s
  leaseDurationSeconds: 300
  acquireTime: %q
  renewTime: %q
`, name, installation, now, now))

	h.run("install", helmRelease, chart, "--namespace", f.Namespace, "--wait", "--timeout", "3m",
		"--set", "namespaced=true", "--set-string", "image.repository="+repository, "--set-string", "image.tag="+tag,
		"--set", "monitoring.enabled=true")
	if objs, err := releaseObjects(f); err != nil || len(strings.Fields(objs)) != 5 {
		t.Fatalf("the release's objects: %q %v, want its Deployment, ServiceAccount, Role, RoleBinding and Service", objs, err)
	}
	// The monitoring objects come only where the Prometheus operator's API is served.
	served := strings.Contains(f.MustKubectl("api-versions"), "monitoring.coreos.com/v1\n")
	manifest := h.run("get", "manifest", helmRelease, "--namespace", f.Namespace)
	if got := strings.Contains(manifest, "kind: PodMonitor"); got != served {
		t.Errorf("monitoring.coreos.com/v1 served: %v; the release has a PodMonitor: %v", served, got)
	}
	// The release may act in its namespace only.
	as := "--as=system:serviceaccount:" + f.Namespace + ":etcd-operator"
	for ns, want := range map[string]string{f.Namespace: "yes", framework.OperatorNamespace: "no", "default": "no"} {
		out, _ := f.Kubectl("auth", "can-i", "create", "pods", "-n", ns, as)
		if got := strings.TrimSpace(out); got != want {
			t.Errorf("may the release's operator create pods in %s? %q, want %s", ns, got, want)
		}
	}

	f.Apply(cluster(name, "  size: 1\n"))
	f.WaitFor("etcdcluster/"+name, "condition=Available", 3*time.Minute)
	if holder, err := leaseHolder(f, name); err != nil || holder != installation {
		t.Fatalf("the cluster's Lease is held by %q (%v), want the release, %s", holder, err, installation)
	}
	f.Eventually("the suite's operator leaves the cluster to the release", 3*time.Minute, func() (bool, error) {
		out, err := f.NS("get", "events", "--field-selector",
			"involvedObject.kind=EtcdCluster,involvedObject.name="+name+",type=Warning,reason=InstallationConflict", "-o", "jsonpath={.items[*].message}")
		return err == nil && strings.Contains(out, "Installation "+installation+" drives this cluster"), fmt.Errorf("events %q, %v", out, err)
	})
	keys := putKeys(t, f, name, "helm", 3)
	before, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	availableSince := before.Status.Conditions
	oldPods, err := operatorPods(f)
	if err != nil || len(oldPods) != 1 {
		t.Fatalf("the release's operator pods: %v %v, want one", oldPods, err)
	}
	memberUID := podUID(f, name+"-0")

	// helm upgrade with one bound changed: the Deployment rolls to a pod with the new flag.
	h.run("upgrade", helmRelease, chart, "--namespace", f.Namespace, "--reuse-values", "--wait", "--timeout", "3m",
		"--set", "bounds.podStuckAfter=20s")
	f.MustNS("rollout", "status", "deployment/"+helmRelease, "--timeout=90s")
	f.Eventually("the old operator pod gone and the new one running with --pod-stuck-after=20s", 2*time.Minute, func() (bool, error) {
		pods, err := operatorPods(f)
		if err != nil {
			return false, err
		}
		for p, args := range pods {
			if _, old := oldPods[p]; old || !strings.Contains(args, "--pod-stuck-after=20s") {
				return false, fmt.Errorf("operator pods %v", pods)
			}
		}
		return len(pods) == 1, fmt.Errorf("operator pods %v", pods)
	})
	// The new pod leads the release (its leader Lease, of the same name as the release's
	// objects) and the release still holds the cluster.
	f.Eventually("the new operator pod leads, and the release still drives the cluster", 2*time.Minute, func() (bool, error) {
		pods, err := operatorPods(f)
		if err != nil {
			return false, err
		}
		leader, err := f.NS("get", "lease", helmRelease, "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil {
			return false, err
		}
		holder, err := leaseHolder(f, name)
		_, isPod := pods[strings.TrimSpace(leader)]
		return err == nil && isPod && holder == installation,
			fmt.Errorf("leader %q of operator pods %v; the cluster's Lease held by %q (%v)", leader, pods, holder, err)
	})
	after, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range after.Status.Conditions {
		for _, b := range availableSince {
			if c.Type == "Available" && b.Type == "Available" && (c.Status != "True" || !c.LastTransitionTime.Equal(b.LastTransitionTime)) {
				t.Errorf("Available went %s at %s during the upgrade (was True since %s)", c.Status, c.LastTransitionTime, b.LastTransitionTime)
			}
		}
	}
	checkKeys(t, f, name, keys)

	// helm uninstall: the operator's objects go; the cluster, its member and claim, its data
	// and the CRDs stay.
	h.run("uninstall", helmRelease, "--namespace", f.Namespace, "--wait", "--timeout", "3m")
	f.Eventually("the release's objects and pods gone", 2*time.Minute, func() (bool, error) {
		objs, err := releaseObjects(f)
		if err != nil || objs != "" {
			return false, fmt.Errorf("objects %q, %v", objs, err)
		}
		pods, err := operatorPods(f)
		return err == nil && len(pods) == 0, fmt.Errorf("operator pods %v, %v", pods, err)
	})
	if out := f.MustNS("get", "secrets", "-l", "owner=helm,name="+helmRelease, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("helm's release records %q are left", out)
	}
	f.MustKubectl("get", "crd", "etcdclusters.etcd.operator.dev", "etcdbackups.etcd.operator.dev", "etcdbackupschedules.etcd.operator.dev")
	if uid := podUID(f, name+"-0"); uid != memberUID {
		t.Errorf("member pod %s-0 is %s, was %s", name, uid, memberUID)
	}
	f.MustNS("get", "etcdcluster/"+name, "pvc/"+member0Claim(f, name))
	checkKeys(t, f, name, keys)

	// The cluster handed to the suite's operator: the Lease deleted while no one renews it.
	f.MustNS("delete", "lease", name+"-operator")
	f.Eventually("the suite's operator takes the cluster", 3*time.Minute, func() (bool, error) {
		holder, err := leaseHolder(f, name)
		return err == nil && holder == framework.OperatorNamespace+"/etcd-operator", fmt.Errorf("lease holder %q, %v", holder, err)
	})
	f.WaitFor("etcdcluster/"+name, "condition=Available", time.Minute)
}

// member0Claim is the claim status lists for the cluster's first member.
func member0Claim(f *framework.Framework, cluster string) string {
	f.T().Helper()
	c, err := f.GetEtcdCluster(cluster)
	if err != nil {
		f.T().Fatal(err)
	}
	for _, m := range c.Status.Members {
		if m.Name == cluster+"-0" && m.Claim != "" {
			return m.Claim
		}
	}
	f.T().Fatalf("status lists no claim for %s-0: %+v", cluster, c.Status.Members)
	return ""
}
