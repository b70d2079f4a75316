//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestMultiNodeRebootAfterRestarts: a member on a claim whose etcd container has restarted
// three times (each time ready again, the way months of node patching leave a pod) is not
// taken for a crash loop when its node reboots: the reboot ends its last run with exit code
// 255 and the pod has not been ready since the node went away, yet the member comes back on
// its data, with its member ID and its claim, and no acknowledged write is lost. Only the
// restarts since the operator last saw the container ready count (docs/status.md).
func TestMultiNodeRebootAfterRestarts(t *testing.T) {
	const name = "example"
	f, node, victim, before, writer := nodeToStop(t, onClaims)
	claim := "data-" + victim
	claimUID := claimUIDs(f, name)[claim]
	if claimUID == "" {
		t.Fatalf("member %s has no claim %s", victim, claim)
	}

	// Three restarts, each waited out until etcd is ready again and the operator has
	// recorded it so: none of them is trouble.
	for n := 1; n <= 3; n++ {
		f.KillContainer(node, victim, "etcd")
		f.Eventually(fmt.Sprintf("%s's etcd restarted %d times and ready", victim, n), 3*time.Minute, func() (bool, error) {
			restarts, ready, err := etcdRestarts(f, victim)
			return err == nil && restarts == n && ready, fmt.Errorf("restarts %d, ready %v (%v)", restarts, ready, err)
		})
		writer.WaitAcked(5, 2*time.Minute)
	}
	f.Eventually("the operator recorded three restarts as of the last ready run", 2*time.Minute, func() (bool, error) {
		got, err := f.NS("get", "pod", victim, "-o", `jsonpath={.metadata.annotations.etcd\.operator\.dev/ready-restarts}`)
		return err == nil && strings.TrimSpace(got) == "3", fmt.Errorf("recorded %q (%v)", got, err)
	})
	f.WaitClusterInSpec(name, 3, 2*time.Minute)

	// The reboot: the pod is marked not ready when the node goes, and the kubelet, back,
	// starts its containers again.
	f.StopNode(node)
	writer.WaitAcked(20, 2*time.Minute)
	f.WaitNodeNotReady(node, 3*time.Minute)
	f.Eventually(victim+" not ready", 3*time.Minute, func() (bool, error) {
		ready, err := f.NS("get", "pod", victim, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return err == nil && strings.TrimSpace(ready) == "False", fmt.Errorf("Ready %q (%v)", ready, err)
	})
	writer.WaitAcked(20, 2*time.Minute)
	started := time.Now()
	f.StartNode(node, 3*time.Minute)
	f.WaitClusterInSpec(name, 3, 5*time.Minute)
	t.Logf("FIGURE node started -> cluster in spec: %.1fs", time.Since(started).Seconds())

	if restarts, _, err := etcdRestarts(f, victim); err != nil || restarts < 4 {
		t.Errorf("%s's etcd restarted %d times (%v), want at least 4: the reboot should have restarted it", victim, restarts, err)
	}
	after, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	if after.MemberID(victim) != before.MemberID(victim) {
		t.Errorf("%s is member %s after the reboot, was %s: a restarted, rebooted member must not be replaced",
			victim, after.MemberID(victim), before.MemberID(victim))
	}
	if uid := claimUIDs(f, name)[claim]; uid != claimUID {
		t.Errorf("claim %s has UID %q after the reboot, was %s: its data must be kept", claim, uid, claimUID)
	}
	if evs := eventsOf(t, f, name, "MemberRemoved"); len(evs) != 0 {
		t.Errorf("MemberRemoved Events %q, want none", evs)
	}
	f.CheckAgreement(name, 3)
	var other string
	for _, m := range framework.MemberNames(name, 3) {
		if m != victim {
			other = m
		}
	}
	writer.StopAndVerify(other)
}

// etcdRestarts reads the restart count of pod's etcd container and whether it is ready.
func etcdRestarts(f *framework.Framework, pod string) (int, bool, error) {
	out, err := f.NS("get", "pod", pod, "-o",
		`jsonpath={.status.containerStatuses[?(@.name=="etcd")].restartCount} {.status.containerStatuses[?(@.name=="etcd")].ready}`)
	if err != nil {
		return 0, false, err
	}
	fields := strings.Fields(out)
	if len(fields) != 2 {
		return 0, false, fmt.Errorf("pod %s: etcd container status %q", pod, out)
	}
	n, err := strconv.Atoi(fields[0])
	return n, fields[1] == "true", err
}
