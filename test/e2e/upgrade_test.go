//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// rolloutTimeout bounds a whole rollout of a size-3 cluster, image pulls included.
const rolloutTimeout = 6 * time.Minute

// versionedCluster is an EtcdCluster of three members at version, on claims or on emptyDir.
func versionedCluster(name, version string, claims bool) string {
	storage := "  storage: {emptyDir: {}}\n"
	if claims {
		storage = "  storage:\n    volumeClaimTemplate:\n      spec:\n        resources: {requests: {storage: 1Gi}}\n"
	}
	return fmt.Sprintf("apiVersion: etcd.operator.dev/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: %s\nspec:\n  size: 3\n  version: %q\n%s",
		name, version, storage)
}

// quorumWatch records, until stopped, every moment status says the cluster has no quorum
// (Available False with reason NoQuorum) or fewer than a majority of members ready, and every
// span longer than noQuorumGrace in which etcd itself says so: no member answers /health with
// true (framework.QuorumAnswers), which it sees while the operator is down too.
type quorumWatch struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	seen []string
	// longest is the longest span in which no member answered healthy.
	longest time.Duration
}

// noQuorumGrace is how long no member may answer healthy before the watch counts it as quorum
// lost: a leader election (etcd's election timeout is a second) and two polls whose answers
// are slow on a loaded node (three members, 2 s each at most) fit in it; a majority down does
// not.
const noQuorumGrace = 10 * time.Second

func watchQuorum(f *framework.Framework, name string) *quorumWatch {
	w := &quorumWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(framework.PollInterval)
		defer tick.Stop()
		var since time.Time // first answer of a span without a healthy member
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			if ok, said := f.QuorumAnswers(name, 3); ok {
				since = time.Time{}
			} else if now := time.Now(); since.IsZero() {
				since = now
			} else if d := now.Sub(since); d > w.longest {
				w.mu.Lock()
				if w.longest <= noQuorumGrace && d > noQuorumGrace {
					w.seen = append(w.seen, fmt.Sprintf("%s: no member has answered healthy for %s (%s)", now.Format(time.RFC3339), d.Round(time.Millisecond), said))
				}
				w.longest = d
				w.mu.Unlock()
			}
			c, err := f.GetEtcdCluster(name)
			if err != nil {
				continue
			}
			reason, msg := c.ConditionReason("Available")
			if reason == "NoQuorum" || (c.Status.Size == 3 && c.Status.ReadyMembers < 2) {
				w.mu.Lock()
				w.seen = append(w.seen, fmt.Sprintf("%s: %d ready (%s: %s)", time.Now().Format(time.RFC3339), c.Status.ReadyMembers, reason, msg))
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// check stops the watch and fails the test if quorum was ever lost.
func (w *quorumWatch) check(t *testing.T) {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("quorum watch: the longest span without a member answering healthy was %s", w.longest.Round(time.Millisecond))
	if len(w.seen) > 0 {
		t.Fatalf("the cluster lost quorum during the rollout %d times, first: %s", len(w.seen), w.seen[0])
	}
}

// waitVersion waits until every member reports version, its pod is current, the cluster is in
// spec and status.currentVersion says version.
func waitVersion(f *framework.Framework, name, version string) {
	f.T().Helper()
	f.Eventually(fmt.Sprintf("%s on etcd %s", name, version), rolloutTimeout, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		for _, m := range c.Status.Members {
			if m.Version != version || !m.PodCurrent {
				return false, fmt.Errorf("member %s reports %q, pod current %v", m.Name, m.Version, m.PodCurrent)
			}
		}
		if c.Status.CurrentVersion != version {
			return false, fmt.Errorf("status.currentVersion %s", c.Status.CurrentVersion)
		}
		return c.InSpec(3)
	})
}

// setVersion patches spec.version the way docs/upgrades.md tells users to.
func setVersion(f *framework.Framework, name, version string) {
	f.Patch("etcdcluster/"+name, fmt.Sprintf(`{"spec":{"version":%q}}`, version))
}

// startVersioned applies a cluster at version and waits until it is in spec, with a writer.
func startVersioned(t *testing.T, name, version string, claims bool) (*framework.Framework, *framework.Writer) {
	t.Helper()
	f := framework.New(t)
	requireOperator(t, f)
	f.Apply(versionedCluster(name, version, claims))
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	return f, f.StartWriter(name)
}

// TestUpgradeWithClaims: 3.5 -> 3.6 -> 3.7 on claims, while the writer runs: to 3.6 each
// member restarts in place (same member IDs), to 3.7 each is replaced; quorum is never lost,
// nothing acknowledged is lost.
func TestUpgradeWithClaims(t *testing.T) {
	t.Parallel()
	const name = "upclaims"
	f, writer := startVersioned(t, name, framework.Version35, true)
	ids := memberIDs(f, name)
	q := watchQuorum(f, name)
	setVersion(f, name, framework.Version36)
	waitVersion(f, name, framework.Version36)
	if got := memberIDs(f, name); fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("after the upgrade to %s, member IDs %v, want %v (restarted in place)", framework.Version36, got, ids)
	}
	// Up to 3.7 the members are replaced: 3.7 cannot replay the log entries 3.5 wrote, which
	// a member's log keeps until its next snapshot.
	setVersion(f, name, framework.Version37)
	waitVersion(f, name, framework.Version37)
	for m, id := range memberIDs(f, name) {
		if id == ids[m] {
			t.Errorf("member %s kept ID %s on the way to %s: it should have been replaced", m, id, framework.Version37)
		}
	}
	q.check(t)
	writer.StopAndVerify(name + "-0")
	f.CheckAgreement(name, 3)
}

// TestUpgradeOnEmptyDir: 3.6 -> 3.7 on emptyDir: each member is replaced (new member IDs),
// quorum is never lost, nothing acknowledged is lost.
func TestUpgradeOnEmptyDir(t *testing.T) {
	t.Parallel()
	const name = "upempty"
	f, writer := startVersioned(t, name, framework.Version36, false)
	ids := memberIDs(f, name)
	q := watchQuorum(f, name)
	setVersion(f, name, framework.Version37)
	waitVersion(f, name, framework.Version37)
	for m, id := range memberIDs(f, name) {
		if id == ids[m] {
			t.Errorf("member %s kept ID %s: an emptyDir member is replaced", m, id)
		}
	}
	// Back down to 3.6 is refused on emptyDir: etcd lets no member join again on new data
	// while a downgrade is in progress. The members keep running 3.7.
	setVersion(f, name, framework.Version36)
	f.Eventually("the downgrade on emptyDir refused", time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		reason, msg := c.ConditionReason("Degraded")
		return reason == "VersionChangeUnsupported" && strings.Contains(msg, "emptyDir"), fmt.Errorf("Degraded %s: %s", reason, msg)
	})
	waitVersion(f, name, framework.Version37)
	q.check(t)
	writer.StopAndVerify(name + "-0")
	f.CheckAgreement(name, 3)
}

// TestDowngrade: 3.7 -> 3.6 on claims through etcd's downgrade API, while the writer runs:
// first a downgrade set back once a member runs 3.6 (etcd's downgrade is cancelled, that
// member goes back to 3.7 on its data, same member ID), then a full one: every member restarts on its data (same member
// IDs) on 3.6, and etcd ends the downgrade with the storage version lowered. Quorum is never
// lost, nothing acknowledged is lost.
func TestDowngrade(t *testing.T) {
	t.Parallel()
	const name = "down"
	f, writer := startVersioned(t, name, framework.Version37, true)
	started := memberIDs(f, name)
	q := watchQuorum(f, name)
	setVersion(f, name, framework.Version36)
	f.Eventually("one member on "+framework.Version36, rolloutTimeout, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		for _, m := range c.Status.Members {
			if m.Version == framework.Version36 {
				return true, nil
			}
		}
		return false, nil
	})
	setVersion(f, name, framework.Version37)
	waitVersion(f, name, framework.Version37)
	waitDowngrade(f, name, "", "3.7.0")
	// The member that went down to 3.6 goes back up on its data: its claim says its data ran
	// on 3.7 (etcd.operator.dev/data-ran-on), so it has no entry 3.7 cannot replay.
	if got := memberIDs(f, name); fmt.Sprint(got) != fmt.Sprint(started) {
		t.Errorf("after the downgrade was set back, member IDs %v, want %v (restarted on their data, not replaced)", got, started)
	}

	ids, pods := memberIDs(f, name), podUIDs(f, name)
	setVersion(f, name, framework.Version36)
	waitVersion(f, name, framework.Version36)
	if got := memberIDs(f, name); fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("after the downgrade, member IDs %v, want %v (restarted on their data)", got, ids)
	}
	// Only the etcd image differs between 3.7 and 3.6 pods: each container is restarted in
	// its pod, which stays.
	if got := podUIDs(f, name); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("after the downgrade, pods %v, want %v (the image changed in place)", got, pods)
	}
	waitDowngrade(f, name, "", "3.6.0")
	q.check(t)
	writer.StopAndVerify(name + "-0")
	f.CheckAgreement(name, 3)
}

// waitDowngrade waits until every member of the size-3 cluster reports etcd's downgrade
// enabled for target ("": none in progress) and its storage version at storage.
func waitDowngrade(f *framework.Framework, name, target, storage string) {
	f.T().Helper()
	f.Eventually(fmt.Sprintf("downgrade %q, storage version %s", target, storage), 2*time.Minute, func() (bool, error) {
		for o := range 3 {
			pod := fmt.Sprintf("%s-%d", name, o)
			out, err := f.Etcdctl(pod, "endpoint", "status", "-w", "json")
			if err != nil {
				return false, err
			}
			var st []struct {
				Status struct {
					StorageVersion string `json:"storageVersion"`
					DowngradeInfo  struct {
						Enabled       bool   `json:"enabled"`
						TargetVersion string `json:"targetVersion"`
					} `json:"downgradeInfo"`
				} `json:"Status"`
			}
			if err := json.Unmarshal([]byte(out), &st); err != nil || len(st) != 1 {
				return false, fmt.Errorf("endpoint status of %s: %v: %s", pod, err, out)
			}
			d := st[0].Status
			got := ""
			if d.DowngradeInfo.Enabled {
				got = d.DowngradeInfo.TargetVersion
			}
			if got != target || d.StorageVersion != storage {
				return false, fmt.Errorf("%s: downgrade %q, storage version %s", pod, got, d.StorageVersion)
			}
		}
		return true, nil
	})
}

// TestRefusedSkip: a started 3.5 cluster cannot be set to 3.7, with a message that says what
// to do; unsupported versions are refused at apply.
func TestRefusedSkip(t *testing.T) {
	t.Parallel()
	const name = "skip"
	f := framework.New(t)
	requireOperator(t, f)
	f.Apply(versionedCluster(name, framework.Version35, false))
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	out, err := f.NS("patch", "etcdcluster/"+name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"version":%q}}`, framework.Version37))
	if err == nil || !strings.Contains(out+err.Error(), "one minor version at a time") {
		t.Fatalf("skipping 3.6: err %v, output %s; want a refusal that says one minor at a time", err, out)
	}
	for _, v := range []string{"2.3.8", "3.4.30", "3.5.4", "3.8.0"} {
		out, err := f.KubectlStdin(versionedCluster("bad-"+strings.ReplaceAll(v, ".", "-"), v, false), "-n", f.Namespace, "apply", "-f", "-")
		if err == nil || !strings.Contains(out+err.Error(), "supports") {
			t.Errorf("version %s: err %v, output %s; want a refusal naming the supported versions", v, err, out)
		}
	}
	c, err := f.GetEtcdCluster(name)
	if err != nil || c.Status.CurrentVersion != framework.Version35 {
		t.Errorf("the cluster runs %q (%v), want %s", c.Status.CurrentVersion, err, framework.Version35)
	}
}

// TestUnpullableVersionRolledBack: a version whose image cannot be pulled stops the rollout at
// its first member, reported; no other member is touched; setting the version back rolls that
// member back. On emptyDir: only the image changes, so the member is rolled in its pod, both
// ways, and keeps its data and member ID (a pod deleted would take them).
func TestUnpullableVersionRolledBack(t *testing.T) {
	t.Parallel()
	const name = "unpullable"
	f, writer := startVersioned(t, name, framework.Version36, false)
	pods, images, ids := podUIDs(f, name), podImages(f, name), memberIDs(f, name)
	q := watchQuorum(f, name)
	// Reported once the rolled member has not come back for --rollout-stuck-after.
	stuckAfter := operatorBounds(t, f).Comeback
	setVersion(f, name, framework.UnpullableVersion)
	f.Eventually("the rollout reported stuck", stuckAfter+4*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		reason, msg := c.ConditionReason("Degraded")
		return reason == "RolloutStuck" && strings.Contains(msg, name+"-2"), nil
	})
	now, nowImages := podUIDs(f, name), podImages(f, name)
	for _, p := range []string{name + "-0", name + "-1"} {
		if now[p] != pods[p] || nowImages[p] != images[p] {
			t.Errorf("pod %s was touched while %s-2 is stuck: image %s, was %s", p, name, nowImages[p], images[p])
		}
	}
	setVersion(f, name, framework.Version36)
	waitVersion(f, name, framework.Version36)
	if got := podUIDs(f, name); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("pods %v, want %v: rolled in place", got, pods)
	}
	if got := memberIDs(f, name); fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("member IDs %v, want %v: restarted on their data", got, ids)
	}
	q.check(t)
	writer.StopAndVerify(name + "-0")
}

// TestPodChangeRolled: a label is patched onto the pods in place; a resource request rolls the
// members one at a time, on their data; an env value etcd refuses stops the rollout on its
// first member, which is rolled back on its data once the value is taken out.
func TestPodChangeRolled(t *testing.T) {
	t.Parallel()
	const name = "podchange"
	f, writer := startVersioned(t, name, framework.Version36, true)
	ids, pods := memberIDs(f, name), podUIDs(f, name)
	q := watchQuorum(f, name)
	f.Patch("etcdcluster/"+name, `{"spec":{"pod":{"labels":{"team":"storage"}}}}`)
	f.Eventually("the label on every pod", 2*time.Minute, func() (bool, error) {
		out, err := f.NS("get", "pods", "-l", "etcd.operator.dev/cluster="+name+",team=storage", "-o", "name")
		return err == nil && len(strings.Fields(out)) == 3, err
	})
	if got := podUIDs(f, name); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("a label change recreated pods: %v, were %v", got, pods)
	}
	f.Patch("etcdcluster/"+name, `{"spec":{"pod":{"resources":{"requests":{"cpu":"100m"}}}}}`)
	waitSameMembers(f, name, ids, pods, 3)
	out := f.MustNS("get", "pods", "-l", "etcd.operator.dev/cluster="+name, "-o",
		`jsonpath={range .items[*]}{.spec.containers[0].resources.requests.cpu}{" "}{.metadata.labels.team}{"\n"}{end}`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "100m storage" {
			t.Errorf("pod request and label %q, want \"100m storage\"", line)
		}
	}

	// A value the schema lets through and etcd refuses at start: an election timeout under
	// five heartbeats. The first member rolled crash-loops; the rollout stops on it and says
	// why, it is not replaced, and no other pod is touched. Set back, it is rolled back on its
	// data.
	ids, pods = memberIDs(f, name), podUIDs(f, name)
	first := firstRolled(f, name)
	// Reported once the rolled member has not come back for --rollout-stuck-after, and said to
	// crash-loop once the kubelet has restarted it three times.
	stuckAfter := operatorBounds(t, f).Comeback
	f.Patch("etcdcluster/"+name, `{"spec":{"pod":{"env":[{"name":"ETCD_ELECTION_TIMEOUT","value":"200"}]}}}`)
	f.Eventually("the rollout stopped on the member that crash-loops", stuckAfter+4*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		reason, msg := c.ConditionReason("Degraded")
		return reason == "RolloutStuck" && strings.Contains(msg, first) && strings.Contains(msg, "crash-loops") &&
			strings.Contains(msg, "election-timeout"), fmt.Errorf("Degraded %s: %s", reason, msg)
	})
	now := podUIDs(f, name)
	for p := range pods {
		if p != first && now[p] != pods[p] {
			t.Errorf("pod %s was touched while %s crash-loops", p, first)
		}
	}
	if got := memberIDs(f, name); fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("member IDs %v, want %v: a member that crash-loops on the rollout's spec is not replaced", got, ids)
	}
	f.Patch("etcdcluster/"+name, `{"spec":{"pod":{"env":null}}}`)
	f.Eventually("rolled back: every pod current, the same members", rolloutTimeout, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		if ok, err := c.InSpec(3); !ok {
			return false, err
		}
		for _, m := range c.Status.Members {
			if !m.PodCurrent {
				return false, fmt.Errorf("pod of %s not current", m.Name)
			}
		}
		for m, id := range ids {
			if got := c.MemberID(m); got != id {
				return false, fmt.Errorf("member %s id %q, want %s", m, got, id)
			}
		}
		return true, nil
	})
	now = podUIDs(f, name)
	for p := range pods {
		if p != first && now[p] != pods[p] {
			t.Errorf("pods %v, were %v: only %s is rolled back", now, pods, first)
		}
	}
	q.check(t)
	writer.StopAndVerify(name + "-0")
}

// firstRolled is the member a rollout of the cluster (of three) rolls first: the highest
// ordinal that does not lead (the leader goes last).
func firstRolled(f *framework.Framework, name string) string {
	f.T().Helper()
	c, err := f.GetEtcdCluster(name)
	if err != nil {
		f.T().Fatal(err)
	}
	for _, m := range slices.Backward(framework.MemberNames(name, 3)) {
		for _, s := range c.Status.Members {
			if s.Name == m && !s.Leader {
				return m
			}
		}
	}
	f.T().Fatalf("no member of %s is a follower: %+v", name, c.Status.Members)
	return ""
}

// TestOperatorKilledMidRollout: the operator is killed once the first member is upgraded; the
// new operator finishes the rollout from what the pods and etcd say.
func TestOperatorKilledMidRollout(t *testing.T) {
	t.Parallel()
	const name = "killed"
	f, writer := startVersioned(t, name, framework.Version36, true)
	q := watchQuorum(f, name)
	setVersion(f, name, framework.Version37)
	f.Eventually("one member rolled", rolloutTimeout, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		for _, m := range c.Status.Members {
			if m.PodCurrent {
				return true, nil
			}
		}
		return false, nil
	})
	f.MustKubectl("-n", framework.OperatorNamespace, "delete", "pod", "-l", "app.kubernetes.io/name=etcd-operator", "--wait=false")
	waitVersion(f, name, framework.Version37)
	q.check(t)
	writer.StopAndVerify(name + "-0")
	f.CheckAgreement(name, 3)
}
