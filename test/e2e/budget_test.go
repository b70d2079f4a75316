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
