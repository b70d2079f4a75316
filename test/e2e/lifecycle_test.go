//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// exampleManifest is the README's example, applied in the test namespace instead of the
// namespace it names.
func exampleManifest(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "example", "etcdcluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "  namespace:") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

func requireOperator(t *testing.T, f *framework.Framework) {
	t.Helper()
	if !f.OperatorDeployed() {
		t.Fatal("the operator is not deployed: run make up first")
	}
}

// putKeys writes n keys through the client Service and returns them.
func putKeys(t *testing.T, f *framework.Framework, cluster, prefix string, n int) map[string]string {
	t.Helper()
	keys := map[string]string{}
	for i := 0; i < n; i++ {
		k, v := fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("value-%s-%d", prefix, i)
		if out, err := f.ClientEtcdctl(cluster, cluster+"-0", "put", k, v); err != nil || !strings.Contains(out, "OK") {
			t.Fatalf("put %s through %s-client: %q %v", k, cluster, out, err)
		}
		keys[k] = v
	}
	return keys
}

// checkKeys reads every key back through the client Service with a linearizable read.
func checkKeys(t *testing.T, f *framework.Framework, cluster string, keys map[string]string) {
	t.Helper()
	for k, v := range keys {
		out, err := f.ClientEtcdctl(cluster, cluster+"-0", "get", k, "--print-value-only")
		if err != nil {
			t.Fatalf("get %s: %v", k, err)
		}
		if got := strings.TrimSpace(out); got != v {
			t.Fatalf("key %s = %q, want %q", k, got, v)
		}
	}
}

// runningExample applies the example in a fresh namespace, waits for its three members and
// starts the acknowledged-write checker on it.
func runningExample(t *testing.T) (*framework.Framework, *framework.Writer) {
	t.Helper()
	f := framework.New(t)
	requireOperator(t, f)
	f.Apply(exampleManifest(t))
	f.WaitClusterInSpec("example", 3, 3*time.Minute)
	return f, f.StartWriter("example")
}

// waitReplaced waits until member pod of cluster name is a new member (not oldID) and the
// cluster is in spec again with three members.
func waitReplaced(f *framework.Framework, name, pod, oldID string) {
	f.T().Helper()
	f.Eventually(pod+" replaced under the same name", 3*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		if id := c.MemberID(pod); id == "" || id == oldID {
			return false, fmt.Errorf("member %s id %q (was %s)", pod, id, oldID)
		}
		return f.ClusterInSpec(name, 3)
	})
}

// podUID is the UID of a pod in the test namespace ("" when there is none).
func podUID(f *framework.Framework, pod string) string {
	f.T().Helper()
	out, err := f.NS("get", "pod", pod, "-o", "jsonpath={.metadata.uid}", "--ignore-not-found")
	if err != nil {
		f.T().Fatalf("reading pod %s: %v", pod, err)
	}
	return strings.TrimSpace(out)
}

// waitRestarted waits until member pod of cluster name runs in a new pod (not oldUID) with
// the same member ID (restarted in place on its claim), and the cluster is in spec again
// with n members.
func waitRestarted(f *framework.Framework, name, pod, id, oldUID string, n int) {
	f.T().Helper()
	f.Eventually(pod+" restarted in place", 3*time.Minute, func() (bool, error) {
		if uid := podUID(f, pod); uid == "" || uid == oldUID {
			return false, fmt.Errorf("pod %s not recreated yet", pod)
		}
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		if got := c.MemberID(pod); got != id {
			return false, fmt.Errorf("member %s id %q, want %s: restarted in place, not replaced", pod, got, id)
		}
		return c.InSpec(n)
	})
}

// noFailedLookups fails the test when a member of the first n logged a failed lookup of a
// member's name: no member may look up a name before cluster DNS serves it, or CoreDNS
// caches the "no such host" for 30 s and the member waits as long.
func noFailedLookups(t *testing.T, f *framework.Framework, cluster string, n int) {
	t.Helper()
	lines, err := f.FailedLookups(cluster, framework.MemberNames(cluster, n)...)
	if err != nil {
		t.Fatalf("reading member logs: %v", err)
	}
	if len(lines) > 0 {
		t.Errorf("members looked up a member's name before cluster DNS served it (%d lines):\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// TestClusterLifecycle drives one cluster through the user's whole story with kubectl:
// apply, patch and scale up and down, lose member pods, lose the operator mid-change,
// delete. After every step etcd's member list, the pods and spec.size agree, the names are
// <name>-0..n-1, and every key written before is still readable through <name>-client.
func TestClusterLifecycle(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "example"

	start := time.Now()
	f.Apply(exampleManifest(t))
	// Available: the cluster serves (the seed alone may); in spec: all three members.
	f.WaitFor("etcdcluster/"+name, "condition=Available", 3*time.Minute)
	f.WaitClusterInSpec(name, 3, time.Minute)
	t.Logf("FIGURE apply -> Available (size 3): %.1fs", time.Since(start).Seconds())
	f.CheckAgreement(name, 3)
	noFailedLookups(t, f, name, 3)
	keys := putKeys(t, f, name, "before-scale", 5)
	// An application writes through every step below; none of its acknowledged puts may be
	// lost.
	writer := f.StartWriter(name)

	steps := []struct {
		desc string
		do   func()
		size int
	}{
		{"kubectl patch spec.size 3->5", func() { f.Patch("etcdcluster/"+name, `{"spec":{"size":5}}`) }, 5},
		{"kubectl scale 5->1", func() { f.Scale("etcdcluster/"+name, 1) }, 1},
		{"kubectl scale 1->3", func() { f.Scale("etcdcluster/"+name, 3) }, 3},
	}
	for _, s := range steps {
		s.do()
		d := f.WaitClusterInSpec(name, s.size, 3*time.Minute)
		t.Logf("FIGURE %s: %.1fs", s.desc, d.Seconds())
		f.CheckAgreement(name, s.size)
		checkKeys(t, f, name, keys)
		writer.WaitAcked(5, time.Minute)
		// whenScaled Delete (the default): the claims of removed members go with them.
		f.Eventually(fmt.Sprintf("%d claims", s.size), time.Minute, func() (bool, error) {
			out, err := f.NS("get", "pvc", "-l", "etcd.operator.dev/cluster="+name, "-o", "name")
			return err == nil && strings.Count(out, "persistentvolumeclaim/") == s.size, fmt.Errorf("claims %q, %v", out, err)
		})
		if s.size == 5 {
			// Members new to the cluster under names never used before in it.
			noFailedLookups(t, f, name, 5)
		}
	}

	// Member pods lost: the seed, then another. Their data is on their claims: each comes
	// back as the same member.
	for _, pod := range []string{name + "-0", name + "-2"} {
		before, err := f.GetEtcdCluster(name)
		if err != nil {
			t.Fatal(err)
		}
		oldID, oldUID := before.MemberID(pod), podUID(f, pod)
		deleted := time.Now()
		f.Delete("pod/" + pod)
		waitRestarted(f, name, pod, oldID, oldUID, 3)
		t.Logf("FIGURE member pod %s deleted -> Available again: %.1fs", pod, time.Since(deleted).Seconds())
		f.CheckAgreement(name, 3)
		checkKeys(t, f, name, keys)
		writer.WaitAcked(5, time.Minute)
	}

	// The operator dies in the middle of a scale-up: the next one finishes the step it left.
	f.Patch("etcdcluster/"+name, `{"spec":{"size":5}}`)
	f.Eventually("scale-up under way", time.Minute, func() (bool, error) {
		out, err := f.NS("get", "pods", "-l", "etcd.operator.dev/cluster="+name, "-o", "name")
		return strings.Count(out, "pod/") > 3, err
	})
	f.MustKubectl("-n", framework.OperatorNamespace, "delete", "pod", "-l", "app.kubernetes.io/name=etcd-operator", "--wait=false")
	f.WaitClusterInSpec(name, 5, 3*time.Minute)
	f.CheckAgreement(name, 5)
	checkKeys(t, f, name, keys)
	writer.StopAndVerify(name + "-0")

	// kubectl wait works the way users script it.
	f.MustNS("wait", "etcdcluster/"+name, "--for=condition=Available", "--timeout=60s")

	// Deleting the cluster removes everything it owned; the claims stay (whenDeleted Retain,
	// the default).
	f.Delete("etcdcluster/" + name)
	f.Eventually("pods and services of "+name+" gone", 2*time.Minute, func() (bool, error) {
		out, err := f.NS("get", "pods,services", "-l", "etcd.operator.dev/cluster="+name, "-o", "name")
		if err != nil {
			return false, err
		}
		if strings.TrimSpace(out) != "" {
			return false, fmt.Errorf("still there: %s", strings.Join(strings.Fields(out), " "))
		}
		return true, nil
	})
	if out := f.MustNS("get", "pvc", "-l", "etcd.operator.dev/cluster="+name, "-o", "name"); strings.Count(out, "persistentvolumeclaim/") != 5 {
		t.Errorf("claims after deleting the cluster (whenDeleted Retain): %q, want the five members'", out)
	}
}

// TestPausedClusterIsLeftAlone: with spec.paused the operator reports a lost member but does
// not replace it; once unpaused it does. On emptyDir, so that storage keeps a test of its own.
func TestPausedClusterIsLeftAlone(t *testing.T) {
	t.Parallel()
	const name = "example"
	// emptyDir: this test also keeps that storage's own behaviour: the lost member is
	// replaced (a new member under its name), not restarted.
	f := framework.New(t)
	requireOperator(t, f)
	f.Apply(strings.TrimRight(exampleManifest(t), "\n") + "\n  storage: {emptyDir: {}}\n")
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	writer := f.StartWriter(name)
	before, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	oldID := before.MemberID(name + "-1")

	f.Patch("etcdcluster/"+name, `{"spec":{"paused":true}}`)
	f.Eventually("phase Paused", time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		return c.Status.Phase == "Paused" && c.Status.ObservedGeneration == c.Metadata.Generation, fmt.Errorf("phase %s", c.Status.Phase)
	})
	f.Delete("pod/" + name + "-1")
	// The operator has seen the loss once status reports the member not ready; a pass that
	// saw it and was allowed to act would have created the pod in that same pass.
	f.Eventually("the lost member reported", time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		for _, m := range c.Status.Members {
			if m.Name == name+"-1" && !m.Ready {
				return true, nil
			}
		}
		return false, fmt.Errorf("members %+v", c.Status.Members)
	})
	f.Eventually("the deleted pod gone", time.Minute, func() (bool, error) {
		_, err := f.NS("get", "pod", name+"-1")
		return err != nil && strings.Contains(err.Error(), "NotFound"), err
	})
	c, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.Phase != "Paused" || c.Status.Size != 3 {
		t.Fatalf("paused cluster: phase %s size %d, want Paused with the lost member still listed", c.Status.Phase, c.Status.Size)
	}
	if out := f.MustNS("get", "events", "--field-selector", "reason=PodCreated", "-o", "name"); strings.Count(out, "\n") > 3 {
		t.Fatalf("pods created while paused: %s", out)
	}

	f.Patch("etcdcluster/"+name, `{"spec":{"paused":false}}`)
	waitReplaced(f, name, name+"-1", oldID)
	writer.StopAndVerify(name + "-0")
}
