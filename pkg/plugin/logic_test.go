package plugin

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// view is a member for the pure tests: id, whether it votes, and its status (nil: it does not
// answer); every member follows member 1.
func view(id uint64, voter bool, st *etcdutil.Status) *memberView {
	v := &memberView{Name: "example-" + string(rune('0'+id-1)), Member: &etcdutil.Member{ID: id, IsLearner: !voter}, Status: st}
	if st == nil {
		v.Err = errors.New("pod is Pending")
	}
	return v
}

func answering(applied uint64, errs ...string) *etcdutil.Status {
	return &etcdutil.Status{Leader: 1, RaftAppliedIndex: applied, Errors: errs}
}

func sessionOf(views ...*memberView) *session {
	return &session{cluster: testClusterObj(int32(len(views))), members: views}
}

func names(vs []*memberView) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return strings.Join(out, ",")
}

// The defragmentation order: the leader (member 1, example-0) last, the others by ordinal;
// members that do not answer skipped; refused when the voters that answer, less the one
// defragmented, are fewer than a quorum.
func TestDefragOrder(t *testing.T) {
	for _, tc := range []struct {
		name         string
		s            *session
		order, skip  string
		quorumAtRisk bool
	}{
		{"three answer", sessionOf(view(1, true, answering(5)), view(2, true, answering(5)), view(3, true, answering(5))),
			"example-1,example-2,example-0", "", false},
		{"a learner is defragmented too, and does not count toward the quorum",
			sessionOf(view(1, true, answering(5)), view(2, true, answering(5)), view(3, true, answering(5)), view(4, false, answering(5))),
			"example-1,example-2,example-3,example-0", "", false},
		{"one of three down", sessionOf(view(1, true, answering(5)), view(2, true, nil), view(3, true, answering(5))), "", "", true},
		{"one of five down", sessionOf(view(1, true, answering(5)), view(2, true, answering(5)), view(3, true, nil), view(4, true, answering(5)), view(5, true, answering(5))),
			"example-1,example-3,example-4,example-0", "example-2", false},
		{"two of five down", sessionOf(view(1, true, answering(5)), view(2, true, nil), view(3, true, nil), view(4, true, answering(5)), view(5, true, answering(5))),
			"", "", true},
		{"a cluster of one", sessionOf(view(1, true, answering(5))), "example-0", "", false},
		{"a pod that is no member is not defragmented",
			sessionOf(view(1, true, answering(5)), &memberView{Name: "example-1", Status: answering(5)}), "example-0", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order, skipped, err := defragOrder(tc.s)
			if tc.quorumAtRisk {
				if !errors.Is(err, ErrQuorumAtRisk) {
					t.Fatalf("defragOrder: %v, want ErrQuorumAtRisk", err)
				}
				return
			}
			if err != nil || names(order) != tc.order || names(skipped) != tc.skip {
				t.Errorf("order %s, skipped %s, %v; want %s, skipped %s", names(order), names(skipped), err, tc.order, tc.skip)
			}
		})
	}
}

// The member leadership goes to: --to if it can lead; else the voter furthest along the log
// that answers, reports no error and follows the leader, the lowest ordinal of equals.
func TestTransferee(t *testing.T) {
	otherLeader := answering(9)
	otherLeader.Leader = 7
	for _, tc := range []struct {
		name    string
		s       *session
		to      string
		want    string
		wantErr string
	}{
		{"the furthest along", sessionOf(view(1, true, answering(9)), view(2, true, answering(7)), view(3, true, answering(8))), "", "example-2", ""},
		{"the lowest ordinal of equals", sessionOf(view(1, true, answering(9)), view(2, true, answering(8)), view(3, true, answering(8))), "", "example-1", ""},
		{"not a member with an alarm", sessionOf(view(1, true, answering(9)), view(2, true, answering(8, "NOSPACE")), view(3, true, answering(7))), "", "example-2", ""},
		{"not a member that follows another leader", sessionOf(view(1, true, answering(9)), view(2, true, otherLeader), view(3, true, answering(7))), "", "example-2", ""},
		{"not a learner, nor one that does not answer", sessionOf(view(1, true, answering(9)), view(2, false, answering(9)), view(3, true, nil)), "", "",
			"no member can take leadership"},
		{"--to a follower", sessionOf(view(1, true, answering(9)), view(2, true, answering(8)), view(3, true, answering(7))), "example-2", "example-2", ""},
		{"--to the leader", sessionOf(view(1, true, answering(9)), view(2, true, answering(8))), "example-0", "example-0", ""},
		{"--to a learner", sessionOf(view(1, true, answering(9)), view(2, false, answering(9))), "example-1", "", "a learner"},
		{"--to a member that does not answer", sessionOf(view(1, true, answering(9)), view(2, true, nil)), "example-1", "", "cannot take leadership: pod is Pending"},
		{"--to no member", sessionOf(view(1, true, answering(9)), view(2, true, answering(9))), "example-5", "", "example-5 is not a member"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := transferee(tc.s, tc.s.members[0], tc.to)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("transferee: %v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got.Name != tc.want {
				t.Fatalf("transferee: %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// A member whose database is at the quota is warned of after a disarm; one below it is not.
func TestStillFull(t *testing.T) {
	s := sessionOf(view(1, true, &etcdutil.Status{DBSize: 2 << 30}), view(2, true, &etcdutil.Status{DBSize: 2<<30 - 1}), view(3, true, nil))
	got := stillFull(s)
	if len(got) != 1 || !strings.HasPrefix(got[0], "example-0's database (2.0GiB) is at its quota (2.0GiB)") {
		t.Errorf("stillFull: %q, want example-0 alone", got)
	}
}

func TestParseDestination(t *testing.T) {
	for _, tc := range []struct {
		in          string
		claim, path string
		wantErr     string
	}{
		{in: "etcd-backups", claim: "etcd-backups"},
		{in: "etcd-backups:example/", claim: "etcd-backups", path: "example/"},
		{in: "etcd-backups:a/b", claim: "etcd-backups", path: "a/b"},
		{in: "s3://bucket/prefix", wantErr: `no destination of scheme "s3"`},
		{in: "Backups", wantErr: "not a claim name"},
		{in: "", wantErr: "not a claim name"},
		{in: "etcd-backups:/abs", wantErr: "relative to the claim's root"},
		{in: "etcd-backups:a/../b", wantErr: "without '..'"},
	} {
		d, err := parseDestination(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseDestination(%q) = %+v, %v; want an error with %q", tc.in, d, err, tc.wantErr)
			}
			continue
		}
		if err != nil || d.Volume == nil || d.Volume.ClaimName != tc.claim || d.Volume.Path != tc.path {
			t.Errorf("parseDestination(%q) = %+v, %v; want claim %q path %q", tc.in, d.Volume, err, tc.claim, tc.path)
		}
	}
}

func TestBackupName(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 30, 5, 0, time.FixedZone("CET", 3600))
	if got := backupName("example", "", now); got != "example-20261125-113005" {
		t.Errorf("backupName = %q, want the cluster and the UTC time", got)
	}
	if got := backupName("example", "mine", now); got != "mine" {
		t.Errorf("backupName with --name = %q", got)
	}
	long := strings.Repeat("a", 33) + "-" + strings.Repeat("b", 16)
	if got := backupName(long, "", now); len(got) > maxBackupName || got != strings.Repeat("a", 33)+"-20261125-113005" {
		t.Errorf("backupName of a 50-character cluster = %q (%d characters)", got, len(got))
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0KiB", 20 << 10: "20.0KiB", 1856 << 20: "1.8GiB", 2 << 30: "2.0GiB"} {
		if got := bytesIEC(in); got != want {
			t.Errorf("bytesIEC(%d) = %q, want %q", in, got, want)
		}
	}
	if got := percent(1999, 2000); got != "99%" {
		t.Errorf("percent(1999, 2000) = %q, want 99%% (rounded down)", got)
	}
	if got := age(testNow.Add(-(49 * time.Hour)), testNow); got != "2d1h" {
		t.Errorf("age of 49h = %q, want kubectl's 2d1h", got)
	}
}

func TestPodState(t *testing.T) {
	deleting := runningPod(0, "n")
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	notReady := runningPod(0, "n")
	notReady.Status.ContainerStatuses[0].Ready = false
	initWaiting := pendingPod(0, "PodInitializing")
	initWaiting.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "install",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
	unscheduled := runningPod(0, "")
	unscheduled.Status = corev1.PodStatus{Phase: corev1.PodPending}
	for _, tc := range []struct {
		pod     *corev1.Pod
		want    string
		serving bool
	}{
		{runningPod(0, "n"), "Running", true},
		{unscheduled, "Pending", false},
		{notReady, "Running, not ready", true},
		{deleting, "Terminating", false},
		{pendingPod(0, "ContainerCreating"), "ContainerCreating", false},
		{initWaiting, "Init:ImagePullBackOff", false},
	} {
		if got := podState(tc.pod); got != tc.want {
			t.Errorf("podState = %q, want %q", got, tc.want)
		}
		if err := notServing(tc.pod); (err == nil) != tc.serving {
			t.Errorf("%s: notServing = %v", tc.want, err)
		}
	}
}

// A member that has not started has no name in etcd's list: its pod is found by its peer
// URL's ordinal, and a member whose pod is gone gets a row of its own.
func TestMergeByPeerURL(t *testing.T) {
	c := testClusterObj(3)
	list := []etcdutil.Member{
		{ID: 1, Name: "example-0", PeerURLs: []string{"http://example-0.default.svc:2380"}},
		{ID: 2, PeerURLs: []string{"http://example-1.default.svc:2380"}, IsLearner: true},
		{ID: 3, Name: "example-2", PeerURLs: []string{"http://example-2.default.svc:2380"}},
	}
	p0, p1 := runningPod(0, "n"), pendingPod(1, "ContainerCreating")
	views := []*memberView{{Name: "example-0", Pod: p0, Status: &etcdutil.Status{ID: 1}}, {Name: "example-1", Pod: p1, Err: errors.New("pending")}}
	got := merge(c, list, views)
	if len(got) != 3 || got[0].Pod != p0 || got[1].Pod != p1 || got[1].Member.ID != 2 || got[2].Pod != nil || got[2].Member.ID != 3 {
		for _, v := range got {
			t.Logf("%s: member %+v pod %v", v.Name, v.Member, v.Pod != nil)
		}
		t.Fatal("members and pods not matched by status ID, name and peer URL")
	}
}
