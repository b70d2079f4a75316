//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// chaosDuration is how long TestChaos disturbs the cluster; E2E_CHAOS_DURATION overrides it.
const chaosDuration = 3 * time.Minute

// chaosRestores is how many of the backups TestChaos's schedule took it restores: the newest,
// which saw the most of the chaos. Each is a new three-member cluster; two are restored side by
// side in about the time of one.
const chaosRestores = 2

// TestChaos disturbs a cluster on claims for minutes while the writer runs: every few seconds
// one of a random member's pod deleted, the operator's pod deleted, or spec.size changed
// (3 to 5). Then the cluster must settle at its size with every acknowledged write. On
// emptyDir such a run loses the cluster as soon as two deletions fall within one
// replacement; on claims members restart in place. The cluster uses TLS on both ports, as a
// production one would: every member restarted or added must find its certificates, and
// the writer writes with the applications' client certificate. A schedule backs it up every
// minute throughout; once the chaos is over, the newest chaosRestores backups that succeeded
// are each restored into a new cluster, which must hold every put acknowledged before its
// backup was created and no gap below the newest put it holds (restoreScheduled). That part
// adds about a minute.
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
	var clock framework.WriterClock
	f.Eventually("the writer's clock", time.Minute, func() (bool, error) {
		c, err := writer.Clock()
		clock = c
		return err == nil, err
	})
	f.Apply(strings.SplitN(exampleFile(t, "etcdbackup-volume.yaml"), "---", 2)[0])
	// keep: more than the chaos and the settling can take, so that none is deleted.
	f.Apply(everyMinuteSchedule(t, 20))
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
	log := writer.StopAndVerify(name + "-0")
	// Checked: the restores have the node to themselves.
	f.Delete("etcdcluster/" + name)
	restoreScheduled(t, f, writer, log, clock)
}

// restoreScheduled suspends the schedule every-minute of TestChaos, waits for its last backup
// to end, and restores each of the newest chaosRestores that succeeded into a new cluster with
// TLS on both ports, as the one backed up. A scheduled backup's EtcdBackup is created before
// its pod, which takes the snapshot: each restored cluster must hold every put the writer had
// acknowledged before the EtcdBackup's creationTimestamp (to the second, rounded down), with
// no acknowledged put missing below the newest it holds. Backups that failed under the chaos
// are logged: a member deleted mid-stream fails an attempt, and three such attempts fail
// the backup.
func restoreScheduled(t *testing.T, f *framework.Framework, writer *framework.Writer, log framework.WriteLog, clock framework.WriterClock) {
	t.Helper()
	var list scheduledBackups
	// A short E2E_CHAOS_DURATION may end before the first scheduled minute.
	f.Eventually("a scheduled backup succeeded", 3*time.Minute, func() (bool, error) {
		if err := f.GetJSON("etcdbackups", &list); err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(b scheduledBackup) bool { return b.Status.Phase == "Succeeded" }), nil
	})
	f.Patch("etcdbackupschedule/every-minute", `{"spec":{"suspend":true}}`)
	f.Eventually("every scheduled backup Succeeded or Failed", 5*time.Minute, func() (bool, error) {
		if err := f.GetJSON("etcdbackups", &list); err != nil {
			return false, err
		}
		for _, b := range list.Items {
			if p := b.Status.Phase; p != "Succeeded" && p != "Failed" {
				return false, fmt.Errorf("backup %s %q", b.Metadata.Name, p)
			}
		}
		return true, nil
	})
	var succeeded []string
	created := map[string]time.Time{}
	for _, b := range list.Items {
		if b.Status.Phase == "Failed" {
			reason, msg := "", ""
			for _, c := range b.Status.Conditions {
				if c.Type == "Failed" {
					reason, msg = c.Reason, c.Message
				}
			}
			t.Logf("backup %s failed under the chaos: %s: %s", b.Metadata.Name, reason, msg)
			continue
		}
		succeeded = append(succeeded, b.Metadata.Name)
		created[b.Metadata.Name] = b.Metadata.CreationTimestamp
		t.Logf("backup %s succeeded: revision %d at %s", b.Metadata.Name, b.Status.Revision, b.Status.Location)
	}
	if len(succeeded) == 0 {
		t.Fatalf("no scheduled backup succeeded in %d", len(list.Items))
	}
	// Names are <schedule>-<minutes since 1970>: sorted, oldest first.
	slices.Sort(succeeded)
	newest := succeeded[max(0, len(succeeded)-chaosRestores):]
	restored := map[string]string{}
	for i, b := range newest {
		r := fmt.Sprintf("restored-%c", 'a'+i)
		restored[r] = b
		f.Apply(cluster(r, fmt.Sprintf("  size: 3\n  tls: {peer: {}, client: {}}\n  bootstrap:\n    fromBackup:\n      backupName: %s\n", b)))
	}
	for r, b := range restored {
		f.WaitClusterInSpec(r, 3, 5*time.Minute)
		n := writer.VerifySnapshotIn(r, r+"-0", log, clock, created[b])
		t.Logf("%s, restored from %s (created %s): %d acknowledged puts", r, b, created[b].Format(time.RFC3339), n)
	}
}
