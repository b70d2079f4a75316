//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The tests in this file need several nodes (their names start with TestMultiNode, which CI
// selects on kind): they run on a multi-node kind cluster
// (CLUSTER=kind make up) and are skipped on the single-node local cluster.

// onEmptyDir is the storage of the tests about members replaced elsewhere when their node
// goes: a local-path claim (kind's default StorageClass) would pin a member to its node.
const onEmptyDir = "  storage: {emptyDir: {}}\n"

// onClaims keeps the example's storage: a claim per member on kind's default StorageClass,
// local-path, so each member's data stays on its node.
const onClaims = ""

// kindExample applies the example, with storage (onEmptyDir, onClaims), on a kind cluster
// with at least two schedulable nodes and returns where its members run. Its member pods carry
// the label e2e-namespace=<namespace>, which no other test's pods have.
func kindExample(t *testing.T, storage string) (*framework.Framework, []framework.Node, map[string]string) {
	t.Helper()
	f := framework.New(t)
	requireOperator(t, f)
	workers := f.RequireKindWorkers(2)
	f.Apply(strings.TrimRight(exampleManifest(t), "\n") + "\n" + storage + "  pod:\n    labels: {e2e-namespace: " + f.Namespace + "}\n")
	f.WaitClusterInSpec("example", 3, 3*time.Minute)
	where, err := f.PodNodes(framework.MemberNames("example", 3)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("members by node: %v", where)
	return f, workers, where
}

// soleMember is a node that holds exactly one member, and that member; the seed only if no
// other member is alone on its node.
func soleMember(where map[string]string) (node, member string) {
	count := map[string]int{}
	for _, n := range where {
		count[n]++
	}
	members := framework.MemberNames("example", 3)
	for _, m := range append(members[1:], members[0]) {
		if count[where[m]] == 1 {
			return where[m], m
		}
	}
	return "", ""
}

// nodeToStop sets up a test that stops a node: the example on kind with storage, the node
// that holds exactly one member (the test is skipped when none does: stopping it would cost
// quorum), the operator and cluster DNS moved off that node (the test is about the member),
// the cluster as it was, and a writer running on another node.
func nodeToStop(t *testing.T, storage string) (f *framework.Framework, node, member string, before *framework.EtcdCluster, writer *framework.Writer) {
	t.Helper()
	f, _, where := kindExample(t, storage)
	node, member = soleMember(where)
	if node == "" {
		t.Skipf("no node holds exactly one member (%v): stopping one would cost quorum", where)
	}
	before, err := f.GetEtcdCluster("example")
	if err != nil {
		t.Fatal(err)
	}
	f.MoveOff(node, framework.OperatorNamespace, "etcd-operator", "app.kubernetes.io/name=etcd-operator")
	f.MoveOff(node, "kube-system", "coredns", "k8s-app=kube-dns")
	return f, node, member, before, f.StartWriter("example", node)
}

// TestMultiNodeSpread: with the default pod anti-affinity, a size-3 cluster's
// members land on different nodes where there is room.
func TestMultiNodeSpread(t *testing.T) {
	_, workers, where := kindExample(t, onEmptyDir)
	nodes := map[string]bool{}
	for _, n := range where {
		nodes[n] = true
	}
	if want := min(3, len(workers)); len(nodes) != want {
		t.Errorf("members on %d nodes (%v), want %d: one per node where there is room", len(nodes), where, want)
	}
}

// TestMultiNodeWorkerLost: the node of one member dies (its container is stopped). The members left
// keep acknowledging writes, and status names the lost member and why. Once the user does
// their part (the pod force-deleted, as for a StatefulSet: nobody else may decide that the
// node no longer runs it), the member is replaced on another node with nothing acknowledged
// lost. The node coming back does not bring the old member back.
func TestMultiNodeWorkerLost(t *testing.T) {
	const name = "example"
	f, victim, lost, before, writer := nodeToStop(t, onEmptyDir)
	var survivor string
	for _, m := range framework.MemberNames(name, 3) {
		if m != lost {
			survivor = m
		}
	}
	oldID := before.MemberID(lost)

	stopped := time.Now()
	f.StopNode(victim)
	writer.WaitAcked(20, 2*time.Minute)
	f.Eventually("status names "+lost, 3*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		_, msg := c.ConditionReason("Degraded")
		return c.Status.ReadyMembers == 2 && c.Condition("Degraded") == "True" && strings.Contains(msg, lost),
			fmt.Errorf("ready %d, Degraded %q", c.Status.ReadyMembers, msg)
	})
	f.WaitNodeNotReady(victim, 3*time.Minute)
	t.Logf("FIGURE node stopped -> NotReady: %.1fs", time.Since(stopped).Seconds())
	writer.WaitAcked(20, 2*time.Minute)

	// The user's part.
	f.MustNS("delete", "pod", lost, "--force", "--grace-period=0")
	deleted := time.Now()
	waitReplaced(f, name, lost, oldID)
	t.Logf("FIGURE pod force-deleted -> member replaced, Available: %.1fs", time.Since(deleted).Seconds())
	now, err := f.PodNodes(lost)
	if err != nil || now[lost] == victim {
		t.Fatalf("%s runs on %q (%v), want another node than %s", lost, now[lost], err, victim)
	}
	after, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	newID := after.MemberID(lost)

	f.StartNode(victim, 3*time.Minute)
	writer.WaitAcked(20, 2*time.Minute)
	f.WaitClusterInSpec(name, 3, 2*time.Minute)
	f.WaitEtcdHealthy(survivor, 3, 2*time.Minute)
	f.CheckAgreement(name, 3)
	if c, err := f.GetEtcdCluster(name); err != nil || c.MemberID(lost) != newID {
		t.Fatalf("after the node came back, %s is member %q (%v), want %s: the old member must not come back", lost, c.MemberID(lost), err, newID)
	}
	writer.StopAndVerify(survivor)
}

// TestMultiNodeDrain: kubectl drain of a worker holding members completes; the disruption
// budget lets the evictions through one member at a time, and the cluster keeps a quorum
// (writes acknowledged) throughout.
func TestMultiNodeDrain(t *testing.T) {
	f, _, where := kindExample(t, onEmptyDir)
	const name = "example"
	count := map[string]int{}
	for _, n := range where {
		count[n]++
	}
	node := ""
	for n, c := range count {
		if node == "" || c > count[node] {
			node = n
		}
	}
	writer := f.StartWriter(name, node)
	t.Cleanup(func() { _, _ = f.Kubectl("uncordon", node) })

	// Status is sampled through the drain: quorum must never be lost. One pass that could not
	// read the member list (the leader being evicted) also says NoQuorum; three samples in a
	// row, 1.5 s, do not come from one pass.
	stop := make(chan struct{})
	var noQuorum []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		run := 0
		for {
			select {
			case <-stop:
				return
			case <-time.After(framework.PollInterval):
			}
			c, err := f.GetEtcdCluster(name)
			if err != nil {
				continue
			}
			if reason, msg := c.ConditionReason("Available"); reason == "NoQuorum" {
				if run++; run == 3 {
					noQuorum = append(noQuorum, time.Now().Format(time.TimeOnly)+" "+msg)
				}
			} else {
				run = 0
			}
		}
	}()

	start := time.Now()
	out, err := f.KubectlFor(7*time.Minute, "drain", node, "--pod-selector=e2e-namespace="+f.Namespace,
		"--delete-emptydir-data", "--ignore-daemonsets", "--timeout=6m")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("drain of %s (holding %d members): %v\n%s", node, count[node], err, out)
	}
	t.Logf("FIGURE drain of a node holding %d members: %.1fs", count[node], time.Since(start).Seconds())
	if strings.Count(out, "evicted") < count[node] {
		t.Errorf("drain output names fewer than %d evictions:\n%s", count[node], out)
	}
	if len(noQuorum) > 0 {
		t.Errorf("the cluster reported no quorum during the drain at %v", noQuorum)
	}
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	now, err := f.PodNodes(framework.MemberNames(name, 3)...)
	if err != nil {
		t.Fatal(err)
	}
	for m, n := range now {
		if n == node {
			t.Errorf("%s still runs on the drained node %s", m, n)
		}
	}
	writer.WaitAcked(5, time.Minute)
	f.CheckAgreement(name, 3)
	writer.StopAndVerify(name + "-0")
}

// TestMultiNodeWorkerRestarted: the node of one member stops and starts again (a reboot): the two
// members left keep acknowledging writes, and once the node is back its member rejoins on the
// data its emptyDir kept, under the same member ID.
func TestMultiNodeWorkerRestarted(t *testing.T) {
	const name = "example"
	f, victim, lost, before, writer := nodeToStop(t, onEmptyDir)

	f.StopNode(victim)
	writer.WaitAcked(20, 2*time.Minute)
	started := time.Now()
	f.StartNode(victim, 3*time.Minute)
	f.WaitClusterInSpec(name, 3, 5*time.Minute)
	t.Logf("FIGURE node started -> cluster in spec: %.1fs", time.Since(started).Seconds())
	after, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	if after.MemberID(lost) != before.MemberID(lost) {
		t.Errorf("%s is member %s after the reboot, was %s: it should have rejoined on its data", lost, after.MemberID(lost), before.MemberID(lost))
	}
	f.CheckAgreement(name, 3)
	writer.StopAndVerify(framework.MemberNames(name, 3)[0])
}
