//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The tests in this file need several nodes: they run on a multi-node kind cluster
// (CLUSTER=kind make up) and are skipped on the single-node local cluster.

// TestWorkerNodeStopped: a worker node holding one member of a size-3 cluster dies (its
// container is stopped: kubelet, containerd and the member go at once). The two members
// left keep acknowledging writes, before and after the control plane has marked the node
// NotReady. Once the node is started again, the cluster is back in spec with every key
// written before and during the outage.
func TestWorkerNodeStopped(t *testing.T) {
	f := framework.New(t)
	requireOperator(t, f)
	f.RequireKindWorkers(2)
	const name = "example"
	f.Apply(exampleManifest(t))
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	keys := putKeys(t, f, name, "before-stop", 5)

	members := framework.MemberNames(name, 3)
	where, err := f.PodNodes(members...)
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string][]string{}
	for _, m := range members {
		perNode[where[m]] = append(perNode[where[m]], m)
	}
	t.Logf("members by node: %v", perNode)
	// The node to stop holds exactly one member, the seed (<name>-0) only if no other does.
	victim, lost := "", ""
	for _, m := range append(members[1:], members[0]) {
		if len(perNode[where[m]]) == 1 {
			victim, lost = where[m], m
			break
		}
	}
	if victim == "" {
		t.Skipf("no node holds exactly one member (%v): the scheduler put them together, and stopping that node would cost quorum", perNode)
	}
	var survivors []string
	for _, m := range members {
		if m != lost {
			survivors = append(survivors, m)
		}
	}

	// put writes keys through one survivor and reads them back, linearizably, through the other.
	put := func(prefix string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			k, v := fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("value-%s-%d", prefix, i)
			f.Eventually("put "+k+" through "+survivors[0], 2*time.Minute, func() (bool, error) {
				out, err := f.Etcdctl(survivors[0], "put", k, v)
				return err == nil && strings.Contains(out, "OK"), err
			})
			keys[k] = v
			out, err := f.Etcdctl(survivors[1], "get", k, "--print-value-only")
			if err != nil || strings.TrimSpace(out) != v {
				t.Fatalf("get %s through %s: %q %v, want %q", k, survivors[1], out, err, v)
			}
		}
	}

	stopped := time.Now()
	f.StopNode(victim)
	t.Logf("stopped node %s holding member %s in %.1fs", victim, lost, time.Since(stopped).Seconds())
	put("node-stopped", 5)
	t.Logf("FIGURE node stopped -> first writes acknowledged by the two members left: %.1fs", time.Since(stopped).Seconds())
	f.WaitNodeNotReady(victim, 3*time.Minute)
	t.Logf("FIGURE node stopped -> NotReady: %.1fs", time.Since(stopped).Seconds())
	put("node-notready", 5)
	if c, err := f.GetEtcdCluster(name); err == nil {
		t.Logf("status with node %s NotReady: phase %s, ready members %d, members %+v", victim, c.Status.Phase, c.Status.ReadyMembers, c.Status.Members)
	}

	started := time.Now()
	f.StartNode(victim, 3*time.Minute)
	t.Logf("FIGURE node started -> Ready: %.1fs", time.Since(started).Seconds())
	f.WaitClusterInSpec(name, 3, 5*time.Minute)
	t.Logf("FIGURE node started -> cluster in spec: %.1fs", time.Since(started).Seconds())
	f.WaitEtcdHealthy(survivors[0], 3, 2*time.Minute)
	f.CheckAgreement(name, 3)
	checkKeys(t, f, name, keys)
}
