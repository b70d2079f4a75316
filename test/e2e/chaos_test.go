//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// chaosDuration is how long TestChaos disturbs the cluster; E2E_CHAOS_DURATION overrides it.
const chaosDuration = 3 * time.Minute

// TestChaos disturbs a cluster on claims for minutes while the writer runs: every few seconds
// one of a random member's pod deleted, the operator's pod deleted, or spec.size changed
// (3 to 5). Then the cluster must settle at its size with every acknowledged write. On
// emptyDir such a run loses the cluster as soon as two deletions fall within one
// replacement; on claims members restart in place. The cluster uses TLS on both ports, as a
// production one would: every member restarted or added must find its certificates, and
// the writer writes with the applications' client certificate.
func TestChaos(t *testing.T) {
	t.Parallel()
	const name = "example"
	duration := chaosDuration
	if s := os.Getenv("E2E_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("E2E_CHAOS_DURATION: %v", err)
		}
		duration = d
	}
	f := framework.New(t)
	requireOperator(t, f)
	f.Apply(strings.TrimRight(exampleManifest(t), "\n") + "\n  tls: {peer: {}, client: {}}\n")
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	writer := f.StartWriter(name)
	seed := time.Now().UnixNano()
	t.Logf("chaos for %v, seed %d", duration, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	size := 3
	counts := map[string]int{}
	// The cadence of the disturbances, not a synchronization: nothing waits on it.
	tick := time.NewTicker(3 * time.Second)
	defer tick.Stop()
	for end := time.Now().Add(duration); time.Now().Before(end); <-tick.C {
		switch n := rng.IntN(10); {
		case n < 6:
			pod := fmt.Sprintf("%s-%d", name, rng.IntN(size))
			if _, err := f.NS("delete", "pod", pod, "--wait=false", "--ignore-not-found"); err != nil {
				t.Logf("deleting %s: %v", pod, err)
			}
			counts["member pod deleted"]++
		case n < 8:
			f.MustKubectl("-n", framework.OperatorNamespace, "delete", "pod", "-l", "app.kubernetes.io/name=etcd-operator", "--wait=false")
			counts["operator pod deleted"]++
		default:
			size = 3 + rng.IntN(3)
			f.Patch("etcdcluster/"+name, fmt.Sprintf(`{"spec":{"size":%d}}`, size))
			counts["spec.size changed"]++
		}
	}
	t.Logf("disturbances: %v; settling at size %d", counts, size)
	// Settled: no member pod going away (status may not have seen the last deletion yet),
	// and the cluster in spec.
	f.Eventually(fmt.Sprintf("%s settled at size %d", name, size), 5*time.Minute, func() (bool, error) {
		out, err := f.NS("get", "pods", "-l", "etcd.operator.dev/cluster="+name, "-o", "jsonpath={.items[*].metadata.deletionTimestamp}")
		if err != nil || strings.TrimSpace(out) != "" {
			return false, fmt.Errorf("member pods terminating: %q, %v", out, err)
		}
		return f.ClusterInSpec(name, size)
	})
	f.CheckAgreement(name, size)
	writer.StopAndVerify(name + "-0")
}
