package memberinit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// idFile writes content to a member ID file, as the downward API would, and returns its path.
func idFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "member-id")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunRefusesLostMember: a member the operator names as started, whose data dir holds no
// data, does not start etcd, neither as the seed of a new cluster (it would bootstrap an empty
// one) nor as a joining member; it asks no one, and its termination message says why.
func TestRunRefusesLostMember(t *testing.T) {
	t.Parallel()
	gone := etcdtest.Reserve(t, "gone")
	for name, o := range map[string]Options{
		"seed": {DataDir: t.TempDir(), PeerURL: "http://m0.peers.ns.svc:2380",
			ClusterState: etcdutil.ClusterStateNew, PollInterval: time.Millisecond},
		"joining member": {DataDir: t.TempDir(), PeerURL: "http://m1.peers.ns.svc:2380",
			ClusterState: etcdutil.ClusterStateExisting, Endpoints: []string{gone.ClientURL}, PollInterval: time.Millisecond},
		"seed, data dir missing": {DataDir: filepath.Join(t.TempDir(), "data"), PeerURL: "http://m0.peers.ns.svc:2380",
			ClusterState: etcdutil.ClusterStateNew, PollInterval: time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			o.MemberIDFile = idFile(t, "8e9e05c52164694d\n")
			o.TerminationLog = filepath.Join(t.TempDir(), "termination-log")
			f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			out := &syncBuffer{}
			err := Run(ctx, o, f, out)
			if !errors.Is(err, ErrDataLost) {
				t.Fatalf("Run = %v, want ErrDataLost\n%s", err, out)
			}
			for _, want := range []string{"8e9e05c52164694d", o.DataDir, "the operator replaces the member"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Run's error %q does not say %q", err, want)
				}
			}
			if n := f.opened.Load(); n != 0 {
				t.Errorf("Run opened %d etcd clients; it must refuse without asking anyone", n)
			}
			if strings.Contains(out.String(), "starting etcd") {
				t.Errorf("Run logged %q", out)
			}
			assertDataLostMessage(t, o.TerminationLog, err)
		})
	}
}

// assertDataLostMessage checks the termination message main writes for Run's error.
func assertDataLostMessage(t *testing.T, path string, err error) {
	t.Helper()
	if werr := WriteTermination(path, err); werr != nil {
		t.Fatalf("WriteTermination: %v", werr)
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if msg := string(b); !IsDataLostMessage(msg) || msg != DataLostPrefix+err.Error() {
		t.Errorf("termination message %q, want %q", msg, DataLostPrefix+err.Error())
	}
}

// TestRunRefusesListedByName: a joining member with no data that etcd lists by name has
// started before (etcd publishes a member's name once it has started), even when the
// operator has not said so yet: it does not start.
func TestRunRefusesListedByName(t *testing.T) {
	t.Parallel()
	members := etcdtest.StartCluster(t, 2)
	lost := members[1]
	o := Options{DataDir: t.TempDir(), PeerURL: lost.PeerURL, ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{members[0].ClientURL}, PollInterval: 10 * time.Millisecond,
		MemberIDFile: idFile(t, ""), TerminationLog: filepath.Join(t.TempDir(), "termination-log")}
	f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	out := &syncBuffer{}
	err := Run(ctx, o, f, out)
	if !errors.Is(err, ErrDataLost) {
		t.Fatalf("Run = %v, want ErrDataLost\n%s", err, out)
	}
	for _, want := range []string{fmt.Sprintf("%x", lost.ID()), lost.Name, o.DataDir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run's error %q does not say %q", err, want)
		}
	}
	assertDataLostMessage(t, o.TerminationLog, err)
}

// TestRunStartsAddedLearner: a member added but never started (a learner etcd lists without
// a name) starts once listed, with an empty member ID file as with none.
func TestRunStartsAddedLearner(t *testing.T) {
	t.Parallel()
	seed := etcdtest.StartCluster(t, 1)[0]
	joiner := etcdtest.Reserve(t, "m1")
	o := Options{DataDir: joiner.Dir, PeerURL: joiner.PeerURL, ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{seed.ClientURL}, PollInterval: 10 * time.Millisecond, MemberIDFile: idFile(t, "\n")}
	f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	defer cancel()
	out := &syncBuffer{}
	done := start(ctx, o, f, out)
	eventually(t, "the cluster answers Run", func() bool { return f.answered.Load() >= 1 })
	addLearner(ctx, t, seed, joiner.PeerURL)
	waitStarts(t, done, out)
	joiner.Join(t, []*etcdtest.Member{seed})
}

// TestRunRefusesUnreadableID: a member ID file that holds something other than an ID is an
// error: member-init neither starts etcd nor waits, and it does not call the data lost.
func TestRunRefusesUnreadableID(t *testing.T) {
	t.Parallel()
	gone := etcdtest.Reserve(t, "gone")
	for name, content := range map[string]string{
		"not hex":   "member-1",
		"0x prefix": "0x8e9e05c52164694d",
		"two IDs":   "8e9e05c52164694d 91bc3c398fb3c146",
		"zero":      "0",
		"too long":  "18e9e05c52164694d",
	} {
		for _, state := range []etcdutil.ClusterState{etcdutil.ClusterStateNew, etcdutil.ClusterStateExisting} {
			o := Options{DataDir: t.TempDir(), PeerURL: "http://m1.peers.ns.svc:2380", ClusterState: state,
				Endpoints: []string{gone.ClientURL}, PollInterval: time.Millisecond, MemberIDFile: idFile(t, content)}
			f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			out := &syncBuffer{}
			err := Run(ctx, o, f, out)
			cancel()
			if err == nil || errors.Is(err, ErrDataLost) || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s, %s: Run = %v, want an error about the member ID file\n%s", name, state, err, out)
			}
			if n := f.opened.Load(); n != 0 {
				t.Errorf("%s, %s: Run opened %d etcd clients", name, state, n)
			}
		}
	}
}

// TestWriteTermination: the message keeps its beginning within what the kubelet keeps, and
// only a lost member's message reads as one.
func TestWriteTermination(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		err      error
		dataLost bool
	}{
		"data lost": {dataLost(0x8e9e05c52164694d, "/var/lib/etcd/data", "named"), true},
		"long":      {fmt.Errorf("%w: %s", ErrDataLost, strings.Repeat("é", maxTerminationMessage)), true},
		"other":     {errors.New("reading member ID file: permission denied"), false},
		"cancelled": {fmt.Errorf("waiting for x to be added: %w", context.Canceled), false},
	} {
		path := filepath.Join(dir, name)
		if err := WriteTermination(path, tc.err); err != nil {
			t.Fatalf("%s: WriteTermination: %v", name, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		msg := string(b)
		if got := IsDataLostMessage(msg); got != tc.dataLost {
			t.Errorf("%s: IsDataLostMessage(%q) = %v, want %v", name, msg, got, tc.dataLost)
		}
		if len(msg) > maxTerminationMessage || !utf8.ValidString(msg) || !strings.HasPrefix(strings.TrimPrefix(msg, DataLostPrefix), tc.err.Error()[:20]) {
			t.Errorf("%s: message of %d bytes %.60q...: want the error's beginning within %d bytes", name, len(msg), msg, maxTerminationMessage)
		}
	}
	if IsDataLostMessage("etcd-operator: member data lost") {
		t.Error("a message without the prefix reads as data lost")
	}
	if err := WriteTermination(filepath.Join(dir, "missing", "log"), ErrDataLost); err == nil {
		t.Error("WriteTermination to a missing directory reported no error")
	}
}
