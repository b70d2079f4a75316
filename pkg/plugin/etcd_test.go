package plugin

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// The commands that talk to etcd, against real embedded members reached through the fake
// forwarder as the port-forwards reach member pods.

func threeMembers(t *testing.T) (*testEnv, []*etcdtest.Member) {
	t.Helper()
	c := testClusterObj(3)
	c.Status = api.EtcdClusterStatus{
		Phase: api.PhaseRunning, Size: 3, ReadyMembers: 3, CurrentVersion: "3.6.16",
		Conditions: []metav1.Condition{
			{Type: string(api.ConditionAvailable), Status: metav1.ConditionTrue, Reason: string(api.ReasonClusterHealthy),
				Message: "all 3 members healthy", LastTransitionTime: metav1.NewTime(testNow.Add(-90 * 1e9))},
		},
		Members: []api.MemberStatus{{Name: "example-0", Claim: "data-example-0"}, {Name: "example-1", Claim: "data-example-1"}, {Name: "example-2", Claim: "data-example-2"}},
	}
	e := newTestEnv(c, runningPod(0, "node-a"), runningPod(1, "node-b"), runningPod(2, "node-c"))
	return e, e.startEtcd(t, 3, nil)
}

// The status page: the cluster's phase and conditions, then one row per member with one
// leader, the member's version and claim, its pod's state and node, in aligned columns.
func TestStatusOfARunningCluster(t *testing.T) {
	t.Parallel()
	e, members := threeMembers(t)
	if err := e.run("status", testCluster); err != nil {
		t.Fatalf("status: %v", err)
	}
	out := e.out.String()
	for _, want := range []string{`(?m)^Phase: +Running$`, `(?m)^Members: +3 ready of 3 \(spec.size 3\)$`,
		`(?m)^Client URL: +http://example-client.default.svc:2379$`, `(?m)^Backend quota: +2.0GiB$`,
		`(?m)^Available +True +ClusterHealthy +90s +all 3 members healthy$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("status lacks %s:\n%s", want, out)
		}
	}
	_, table, _ := strings.Cut(out, "Members:\n")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 4 {
		t.Fatalf("member table of %d lines, want a header and 3 members:\n%s", len(lines), table)
	}
	roleAt := strings.Index(lines[0], "ROLE")
	leaders := 0
	for i, l := range lines[1:] {
		name := fmt.Sprintf("example-%d", i)
		fields := strings.Fields(l)
		if fields[0] != name || !strings.Contains(l, "3.6.16") || !strings.Contains(l, "data-"+name) ||
			!strings.Contains(l, "Running") || !strings.Contains(l, "node-"+string(rune('a'+i))) {
			t.Errorf("row %q: want %s, its version, claim, pod state and node", l, name)
		}
		role := strings.Fields(l[roleAt:])[0]
		if role == "leader" {
			leaders++
			if name != leaderName(t, members) {
				t.Errorf("%s shown as the leader; etcd says %s", name, leaderName(t, members))
			}
		} else if role != "follower" {
			t.Errorf("row %q: role %q in the ROLE column", l, role)
		}
	}
	if leaders != 1 {
		t.Errorf("%d leaders shown:\n%s", leaders, table)
	}
}

// A member whose pod is not running is shown with its pod's state and why it is not asked;
// the others answer.
func TestStatusWithAMemberDown(t *testing.T) {
	t.Parallel()
	e, members := threeMembers(t)
	members[2].Stop()
	if err := e.kube.CoreV1().Pods(testNamespace).Delete(context.Background(), "example-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kube.CoreV1().Pods(testNamespace).Create(context.Background(), pendingPod(2, "CrashLoopBackOff"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.run("status", testCluster); err != nil {
		t.Fatalf("status: %v", err)
	}
	out := e.out.String()
	if !regexp.MustCompile(`(?m)^example-2 .*CrashLoopBackOff`).MatchString(out) {
		t.Errorf("example-2's row lacks its pod's state:\n%s", out)
	}
	if !strings.Contains(out, "example-2: pod example-2 is CrashLoopBackOff") {
		t.Errorf("no note of why example-2 is not asked:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^example-[01] .*(leader|follower)`).MatchString(out) {
		t.Errorf("the members that answer lack their roles:\n%s", out)
	}
}

// members lists etcd's member list by name, with each member's ID and URLs.
func TestMembers(t *testing.T) {
	t.Parallel()
	e, members := threeMembers(t)
	if err := e.run("members", testCluster); err != nil {
		t.Fatalf("members: %v", err)
	}
	out := e.out.String()
	for _, m := range members {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^%s +%x +voter +true +%s +%s$`, m.Name, m.ID(), regexp.QuoteMeta(m.PeerURL), regexp.QuoteMeta(m.ClientURL))).MatchString(out) {
			t.Errorf("no row for %s (%x):\n%s", m.Name, m.ID(), out)
		}
	}
}

// defrag goes through every member once, the leader last, with a line for each.
func TestDefragLeaderLast(t *testing.T) {
	t.Parallel()
	e, members := threeMembers(t)
	if err := e.run("defrag", testCluster); err != nil {
		t.Fatalf("defrag: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(e.out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want one per member:\n%s", len(lines), e.out.String())
	}
	seen := map[string]bool{}
	for i, l := range lines {
		m := regexp.MustCompile(`^\[(\d)/3\] (example-\d) \((leader|follower)\): defragmenting \S+ \.\.\. \S+ in \S+$`).FindStringSubmatch(l)
		if m == nil || m[1] != fmt.Sprint(i+1) {
			t.Fatalf("line %q: want [%d/3] NAME (ROLE): defragmenting SIZE ... SIZE in TIME", l, i+1)
		}
		seen[m[2]] = true
		if last := i == len(lines)-1; last != (m[2] == leaderName(t, members)) || last != (m[3] == "leader") {
			t.Errorf("line %d of 3 is %s (%s); the leader, %s, goes last", i+1, m[2], m[3], leaderName(t, members))
		}
	}
	if len(seen) != 3 {
		t.Errorf("members defragmented: %v, want each once", seen)
	}
}

// With one of three voting members down, defragmenting another would leave one serving: it is
// refused before any member is touched, naming the member to bring back.
func TestDefragRefusedWhenAMemberIsDown(t *testing.T) {
	t.Parallel()
	e, members := threeMembers(t)
	members[1].Stop()
	err := e.run("defrag", testCluster)
	if err == nil || !strings.Contains(err.Error(), "bring back example-1") {
		t.Fatalf("defrag with a member down: %v, want it refused naming example-1", err)
	}
	if e.out.String() != "" {
		t.Errorf("members defragmented before the refusal:\n%s", e.out.String())
	}
}

// move-leader without --to hands leadership to another voting member; with --to, to that one;
// to the leader itself, it changes nothing.
func TestMoveLeader(t *testing.T) {
	t.Parallel()
	e, members := threeMembers(t)
	before := leaderName(t, members)
	if err := e.run("move-leader", testCluster); err != nil {
		t.Fatalf("move-leader: %v", err)
	}
	after := leaderName(t, members)
	if after == before || !strings.Contains(e.out.String(), "leadership moved from "+before+" to "+after) {
		t.Fatalf("leader %s, was %s; output %q", after, before, e.out.String())
	}

	var to string
	for _, m := range members {
		if m.Name != after {
			to = m.Name
		}
	}
	e.out.buf.Reset()
	if err := e.run("move-leader", testCluster, "--to", to); err != nil {
		t.Fatalf("move-leader --to %s: %v", to, err)
	}
	if got := leaderName(t, members); got != to {
		t.Errorf("move-leader --to %s: %s leads", to, got)
	}
	e.out.buf.Reset()
	if err := e.run("move-leader", testCluster, "--to", to); err != nil || e.out.String() != to+" leads already\n" {
		t.Errorf("move-leader --to the leader: %q, %v", e.out.String(), err)
	}
	if err := e.run("move-leader", testCluster, "--to", "example-7"); err == nil || !strings.Contains(err.Error(), "example-7 is not a member") {
		t.Errorf("move-leader --to a member that does not exist: %v", err)
	}
}

// alarm list shows NOSPACE by member once the quota is reached; alarm disarm clears it; alarm
// list then shows none.
func TestAlarmListAndDisarm(t *testing.T) {
	t.Parallel()
	c := testClusterObj(1)
	e := newTestEnv(c, runningPod(0, "node-a"))
	members := e.startEtcd(t, 1, func(cfg *embed.Config) { cfg.QuotaBackendBytes = 1 << 16 })
	if err := e.run("alarm", "list", testCluster); err != nil || e.out.String() != "" || !strings.Contains(e.errOut.String(), "No alarms") {
		t.Fatalf("alarm list with none: out %q, err %q, %v", e.out.String(), e.errOut.String(), err)
	}

	raw, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.ClientURLs(members...), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for i := 0; i < 1000; i++ {
		if _, err := raw.Put(context.Background(), fmt.Sprintf("k%d", i), strings.Repeat("x", 8<<10)); err != nil {
			break
		}
	}
	if err := e.run("alarm", "list", testCluster); err != nil {
		t.Fatalf("alarm list: %v", err)
	}
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^example-0 +%x +NOSPACE$`, members[0].ID())).MatchString(e.out.String()) {
		t.Fatalf("alarm list: %q, want NOSPACE of example-0", e.out.String())
	}

	e.out.buf.Reset()
	e.errOut.buf.Reset()
	if err := e.run("alarm", "disarm", testCluster); err != nil || e.out.String() != "example-0: NOSPACE disarmed\n" {
		t.Fatalf("alarm disarm: %q, %v", e.out.String(), err)
	}
	e.out.buf.Reset()
	if err := e.run("alarm", "list", testCluster); err != nil || e.out.String() != "" {
		t.Errorf("alarm list after disarming: %q, %v", e.out.String(), err)
	}
}

// compact compacts to the current revision and says which.
func TestCompact(t *testing.T) {
	t.Parallel()
	e := newTestEnv(testClusterObj(1), runningPod(0, "node-a"))
	members := e.startEtcd(t, 1, nil)
	raw, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.ClientURLs(members...), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	resp, err := raw.Put(context.Background(), "k", "v")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.run("compact", testCluster, "--physical"); err != nil {
		t.Fatalf("compact: %v", err)
	}
	want := fmt.Sprintf("compacted etcdcluster example to revision %d, physically\n", resp.Header.Revision)
	if e.out.String() != want {
		t.Errorf("compact: %q, want %q", e.out.String(), want)
	}
}
