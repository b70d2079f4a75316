//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// evict asks the eviction API to evict pod, as kubectl drain does; the error is the API's
// answer when it refuses.
func evict(f *framework.Framework, pod string) error {
	body := fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q,"namespace":%q}}`, pod, f.Namespace)
	_, err := f.KubectlStdin(body, "create", "--raw", fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/eviction", f.Namespace, pod), "-f", "-")
	return err
}

// TestDisruptionBudget: voluntary evictions take one member of three at a time: a second
// eviction while the first member is still coming back is refused, and allowed again once
// the cluster is whole. The budget follows spec.size. An application writes throughout.
func TestDisruptionBudget(t *testing.T) {
	t.Parallel()
	const name = "example"
	f, writer := runningExample(t)

	allowed := func(want string) {
		t.Helper()
		f.Eventually("disruption budget allows "+want, time.Minute, func() (bool, error) {
			out, err := f.NS("get", "pdb", name, "-o", "jsonpath={.spec.minAvailable}/{.status.disruptionsAllowed}")
			return err == nil && strings.TrimSpace(out) == want, fmt.Errorf("minAvailable/allowed %q, %v", out, err)
		})
	}
	memberID := func(pod string) string {
		t.Helper()
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			t.Fatal(err)
		}
		return c.MemberID(pod)
	}
	allowed("2/1")
	first, firstUID := memberID(name+"-1"), podUID(f, name+"-1")
	if err := evict(f, name+"-1"); err != nil {
		t.Fatalf("first eviction refused: %v", err)
	}
	err := evict(f, name+"-2")
	if err == nil || !strings.Contains(err.Error(), "disruption budget") {
		t.Fatalf("second eviction while %s-1 is coming back = %v, want it refused by the disruption budget", name, err)
	}
	waitRestarted(f, name, name+"-1", first, firstUID, 3)
	writer.WaitAcked(5, time.Minute)
	allowed("2/1")
	second, secondUID := memberID(name+"-2"), podUID(f, name+"-2")
	if err := evict(f, name+"-2"); err != nil {
		t.Fatalf("eviction once the cluster is whole again refused: %v", err)
	}
	waitRestarted(f, name, name+"-2", second, secondUID, 3)

	f.Patch("etcdcluster/"+name, `{"spec":{"size":5}}`)
	f.WaitClusterInSpec(name, 5, 3*time.Minute)
	allowed("3/2")
	writer.StopAndVerify(name + "-0")
}

// TestRolloutWaitsForDisruptionBudget: a rollout's restart of a serving member is an eviction,
// so a disruption budget that allows none holds it, as it holds a drain. The budget of the
// cluster's name is made first, by someone else, with minAvailable 3: the cluster has no
// budget of its own then (the operator leaves that one alone), and with its three members
// Ready the budget allows no disruption, deterministically. A spec.pod change is not rolled
// while it allows none: Progressing says the rollout waits for the disruption budget, quoting
// the API server, an EvictionRefused Event says so, and no pod is touched; past the rollout's
// bound (1m in this suite) of refusals, Degraded says EvictionRefused and that the budget of
// the cluster's name is not the operator's. Once the budget allows one (minAvailable 2), the
// rollout goes on, one member at a time, on the same members, and nothing acknowledged is lost.
func TestRolloutWaitsForDisruptionBudget(t *testing.T) {
	t.Parallel()
	const name = "budgetroll"
	f := framework.New(t)
	requireOperator(t, f)
	f.Apply(fmt.Sprintf("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: %s\nspec:\n  minAvailable: 3\n"+
		"  selector:\n    matchLabels:\n      etcd.operator.dev/cluster: %s\n", name, name))
	f.Apply(versionedCluster(name, framework.Version36, true))
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	writer := f.StartWriter(name)
	f.Eventually("the budget counts three members Ready and allows no disruption", time.Minute, func() (bool, error) {
		out, err := f.NS("get", "pdb", name, "-o", "jsonpath={.status.currentHealthy}/{.status.disruptionsAllowed}")
		return err == nil && strings.TrimSpace(out) == "3/0", fmt.Errorf("currentHealthy/disruptionsAllowed %q, %v", out, err)
	})

	ids, pods := memberIDs(f, name), podUIDs(f, name)
	f.Patch("etcdcluster/"+name, `{"spec":{"pod":{"resources":{"requests":{"cpu":"60m"}}}}}`)
	f.Eventually("the rollout waits for the disruption budget", 2*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		reason, msg := c.ConditionReason("Progressing")
		waits := strings.Contains(msg, "waiting for the disruption budget") && strings.Contains(msg, "refuses to evict pod")
		return reason == "RollingPods" && waits && strings.Contains(msg, "disruption budget."), fmt.Errorf("Progressing %s: %s", reason, msg)
	})
	if out := f.MustNS("get", "events", "--field-selector", "reason=EvictionRefused", "-o", "name"); strings.TrimSpace(out) == "" {
		t.Error("no EvictionRefused Event while the rollout waits for the budget")
	}
	f.Eventually("Degraded says the evictions are refused past the rollout's bound", 3*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		reason, msg := c.ConditionReason("Degraded")
		return reason == "EvictionRefused" && strings.Contains(msg, "is not the operator's"), fmt.Errorf("Degraded %s: %s", reason, msg)
	})
	if got := podUIDs(f, name); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("pods %v, were %v: a pod was deleted although the budget allows no disruption", got, pods)
	}

	f.Patch("pdb/"+name, `{"spec":{"minAvailable":2}}`)
	waitSameMembers(f, name, ids, pods, 3)
	if c, err := f.GetEtcdCluster(name); err != nil {
		t.Error(err)
	} else if reason, msg := c.ConditionReason("Degraded"); reason == "EvictionRefused" {
		t.Errorf("Degraded still says %s once the rollout is done: %s", reason, msg)
	}
	out := f.MustNS("get", "pods", "-l", "etcd.operator.dev/cluster="+name, "-o",
		`jsonpath={range .items[*]}{.spec.containers[0].resources.requests.cpu}{"\n"}{end}`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "60m" {
			t.Errorf("pod cpu request %q after the rollout, want 60m", line)
		}
	}
	if out := f.MustNS("get", "events", "--field-selector", "reason=PodEvicted", "-o", "name"); strings.Count(strings.TrimSpace(out), "\n")+1 < 2 {
		t.Errorf("PodEvicted Events %q: the rollout's restarts of serving members were not evictions", out)
	}
	writer.StopAndVerify(name + "-0")
}
