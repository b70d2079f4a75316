//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// Stuck states: each is repaired, or named in status within its bound (--pod-stuck-after for
// a pod that cannot start: operatorBounds), never left as "Progressing" with "nothing is
// wrong".

// clusterManifest is an EtcdCluster named name with the given spec lines (indented by two).
func clusterManifest(name, spec string) string {
	return fmt.Sprintf("apiVersion: etcd.operator.dev/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: %s\nspec:\n%s", name, spec)
}

// waitCondition waits until the cluster's condition t has the status and reason wanted, and
// returns its message.
func waitCondition(t *testing.T, f *framework.Framework, name, cond, status, reason string, timeout time.Duration) string {
	t.Helper()
	var msg string
	if err := f.WatchEtcdCluster(name, timeout, func(c *framework.EtcdCluster) (bool, error) {
		r, m := c.ConditionReason(cond)
		msg = m
		if c.Condition(cond) != status || r != reason {
			return false, fmt.Errorf("%s=%s reason %s (%s), want %s %s", cond, c.Condition(cond), r, m, status, reason)
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	return msg
}

// eventsOf lists the Events of the cluster with the given reason.
func eventsOf(t *testing.T, f *framework.Framework, name, reason string) []string {
	t.Helper()
	out := f.MustNS("get", "events", "--field-selector",
		"involvedObject.kind=EtcdCluster,involvedObject.name="+name+",reason="+reason,
		"-o", `jsonpath={range .items[*]}{.count}x {.message}{"\n"}{end}`)
	return strings.FieldsFunc(out, func(r rune) bool { return r == '\n' })
}

// TestSeedPodDeletedAtOnce: the seed's pod is deleted as soon as it exists, before the cluster
// has served. The cluster is bootstrapped again (the pod made ahead goes first) and comes up
// whole, instead of waiting for a seed that never comes back.
func TestSeedPodDeletedAtOnce(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "seedgone"
	f.Apply(clusterManifest(name, "  size: 3\n"))
	var uid string
	f.Eventually("seed pod created", time.Minute, func() (bool, error) {
		uid = podUID(f, name+"-0")
		return uid != "", nil
	})
	f.MustNS("delete", "pod", name+"-0", "--wait=false")
	c, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed pod deleted with status.size %d (0: before the cluster was seen serving)", c.Status.Size)
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	if now := podUID(f, name+"-0"); now == uid {
		t.Fatalf("pod %s-0 is still the deleted one", name)
	}
	f.CheckAgreement(name, 3)
	keys := putKeys(t, f, name, "after", 3)
	checkKeys(t, f, name, keys)
}

// TestImagePullFailureReported: a cluster whose image cannot be pulled says so within the
// bound: Degraded PodCannotStart with the kubelet's own reason and message, one Warning
// Event, visible in kubectl get etcd's phase and kubectl describe.
func TestImagePullFailureReported(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "badimage"
	bound := operatorBounds(t, f).StuckAfter
	f.Apply(clusterManifest(name, "  size: 1\n  repository: registry.invalid/no/etcd\n"))
	start := time.Now()
	// The bound counts from the pod's creation; the pull fails within seconds of it.
	msg := waitCondition(t, f, name, "Degraded", "True", "PodCannotStart", bound+90*time.Second)
	t.Logf("FIGURE apply -> Degraded PodCannotStart: %.1fs", time.Since(start).Seconds())
	if !strings.Contains(msg, name+"-0") || !(strings.Contains(msg, "ImagePullBackOff") || strings.Contains(msg, "ErrImagePull")) ||
		!strings.Contains(msg, "registry.invalid/no/etcd") {
		t.Errorf("Degraded message %q does not name the pod, the kubelet's reason and the image", msg)
	}
	// Said once, not on every pass: wait a few passes, then count.
	f.Eventually("a Warning Event", time.Minute, func() (bool, error) {
		return len(eventsOf(t, f, name, "PodCannotStart")) > 0, nil
	})
	if evs := eventsOf(t, f, name, "PodCannotStart"); len(evs) != 1 || !strings.HasPrefix(evs[0], "1x ") {
		t.Errorf("PodCannotStart Events %q, want exactly one, once", evs)
	}
	// Fixed: the cluster starts once the spec names a repository that exists; the seed's pod,
	// built from the earlier spec, is made again by the operator.
	f.Patch("etcdcluster/"+name, `{"spec":{"repository":"gcr.io/etcd-development/etcd"}}`)
	f.WaitClusterInSpec(name, 1, 3*time.Minute)
}

// TestCrashLoopingMemberReplaced: a member whose data is corrupt crash-loops; after the bound
// it is replaced (removed, its claim made anew, added again) while the other two keep quorum,
// and no acknowledged write is lost.
func TestCrashLoopingMemberReplaced(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "crashloop"
	f.Apply(clusterManifest(name, "  size: 3\n"))
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	writer := f.StartWriter(name)
	oldID := memberIDs(f, name)[name+"-2"]
	claim := "data-" + name + "-2"
	claimUID := claimUIDs(f, name)[claim]

	// Paused, the operator makes no change: the member's pod goes, its data is overwritten
	// from a pod of our own, and the cluster is let go again.
	f.Patch("etcdcluster/"+name, `{"spec":{"paused":true}}`)
	f.MustNS("delete", "pod", name+"-2", "--wait=true", "--timeout=60s")
	f.RunOnClaim("corrupt", claim, false, "printf 'not a bolt database' > /data/data/member/snap/db && sync")
	f.Patch("etcdcluster/"+name, `{"spec":{"paused":false}}`)

	// The kubelet's back-off takes about a minute and a half to restart etcd three times (a
	// crash loop), then the bound, then the member is replaced.
	bound := operatorBounds(t, f).StuckAfter
	start := time.Now()
	f.Eventually(name+"-2 replaced by a new member on a new claim", bound+5*time.Minute+30*time.Second, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		if id := c.MemberID(name + "-2"); id == "" || id == oldID {
			return false, fmt.Errorf("member %s-2 id %q (was %s)", name, id, oldID)
		}
		if uid := claimUIDs(f, name)[claim]; uid == claimUID {
			return false, fmt.Errorf("claim %s not replaced", claim)
		}
		return c.InSpec(3)
	})
	t.Logf("FIGURE corrupt member -> replaced, in spec: %.1fs", time.Since(start).Seconds())
	f.CheckAgreement(name, 3)
	writer.StopAndVerify(name + "-0")
}

// TestNoSpaceAlarmReported: with the smallest backend quota (from the smallest emptyDir
// sizeLimit), writes fill it and etcd raises NOSPACE: Available turns False and Degraded
// names the alarm and the member. docs/status.md's procedure (compact, defrag, disarm) clears it.
func TestNoSpaceAlarmReported(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "nospace"
	// The smallest emptyDir the schema takes: the operator derives etcd's backend quota from
	// it (64Mi), which a filler pod then exceeds through the client Service.
	f.Apply(clusterManifest(name, "  size: 1\n  storage:\n    emptyDir: {sizeLimit: 512Mi}\n"))
	f.WaitClusterInSpec(name, 1, 3*time.Minute)
	pod := name + "-0"
	if args, err := f.NS("get", "pod", pod, "-o", "jsonpath={.spec.containers[0].args}"); err != nil || !strings.Contains(args, "--quota-backend-bytes=67108864") {
		t.Fatalf("pod %s args %q (%v): want --quota-backend-bytes=67108864", pod, args, err)
	}
	fillQuota(t, f, name)
	msg := waitCondition(t, f, name, "Degraded", "True", "AlarmNoSpace", time.Minute)
	if !strings.Contains(msg, "NOSPACE") || !strings.Contains(msg, pod) {
		t.Errorf("Degraded message %q does not name the alarm and %s", msg, pod)
	}
	waitCondition(t, f, name, "Available", "False", "AlarmNoSpace", time.Minute)

	// Cleared as docs/status.md says: the keys deleted, history compacted, defragmented, disarmed.
	if _, err := f.Etcdctl(pod, "del", "fill/", "--prefix"); err != nil {
		t.Fatalf("deleting the keys: %v", err)
	}
	out, err := f.Etcdctl(pod, "endpoint", "status", "-w", "json")
	if err != nil {
		t.Fatalf("endpoint status: %v", err)
	}
	var status []struct {
		Status struct {
			Header struct {
				Revision int64 `json:"revision"`
			} `json:"header"`
		} `json:"Status"`
	}
	if err := json.Unmarshal([]byte(out), &status); err != nil || len(status) == 0 {
		t.Fatalf("endpoint status %q: %v", out, err)
	}
	for _, args := range [][]string{
		{"compaction", strconv.FormatInt(status[0].Status.Header.Revision, 10)},
		{"defrag"},
		{"alarm", "disarm"},
	} {
		if out, err := f.Etcdctl(pod, args...); err != nil {
			t.Fatalf("etcdctl %v: %q %v", args, out, err)
		}
	}
	waitCondition(t, f, name, "Available", "True", "ClusterHealthy", time.Minute)
	keys := putKeys(t, f, name, "after", 2)
	checkKeys(t, f, name, keys)
}

// fillerScript puts values of 768KiB (1MiB as JSON, under etcd's request limit) through the
// JSON gateway until etcd refuses one, then prints FULL and the number of puts; NOTFULL if
// 400 puts (300MiB) went through.
const fillerScript = `
head -c 786432 /dev/zero | base64 -w0 >/tmp/v
i=0
while [ $i -lt 400 ]; do
  { printf '{"key":"%s","value":"' "$(printf 'fill/%04d' $i | base64)"; cat /tmp/v; printf '"}'; } >/tmp/req
  if ! timeout 10 wget -q -O /dev/null --post-file /tmp/req "$ENDPOINT/v3/kv/put" 2>/dev/null; then
    echo "FULL $i"
    exit 0
  fi
  i=$((i+1))
done
echo NOTFULL
`

// fillQuota runs a pod that writes to the cluster until etcd refuses a put, and waits for it.
func fillQuota(t *testing.T, f *framework.Framework, cluster string) {
	t.Helper()
	ip := strings.TrimSpace(f.MustNS("get", "service", cluster+"-client", "-o", "jsonpath={.spec.clusterIP}"))
	f.Apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: filler
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: filler
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    env:
    - {name: ENDPOINT, value: "http://%s"}
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
`, framework.WriterImage, fillerScript, net.JoinHostPort(ip, "2379")))
	f.Eventually("the filler pod has finished", 3*time.Minute, func() (bool, error) {
		phase, err := f.NS("get", "pod", "filler", "-o", "jsonpath={.status.phase}")
		return err == nil && (phase == "Succeeded" || phase == "Failed"), err
	})
	out, err := f.NS("logs", "filler")
	if err != nil || !strings.Contains(out, "FULL ") || strings.Contains(out, "NOTFULL") {
		t.Fatalf("filler: %q %v: want etcd to refuse a put once its quota is full", out, err)
	}
}
