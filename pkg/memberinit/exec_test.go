package memberinit

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

func TestInstallFrom(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	content := []byte("#!/bin/sh\necho installed\n")
	if err := os.WriteFile(src, content, 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "bin", "etcd-operator")
	if err := os.Mkdir(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	// Twice: a restarted init container installs over its earlier copy.
	for i := 0; i < 2; i++ {
		if err := installFrom(src, dest); err != nil {
			t.Fatalf("installFrom #%d: %v", i, err)
		}
	}
	got, err := os.ReadFile(dest)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("installed %q, %v; want %q", got, err, content)
	}
	if fi, _ := os.Stat(dest); fi.Mode().Perm() != 0o755 {
		t.Errorf("installed with mode %v, want 0755: the etcd container's user runs it", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(filepath.Dir(dest)); len(entries) != 1 {
		t.Errorf("the volume holds %v; temporary copies must not stay", entries)
	}
	if err := installFrom(filepath.Join(dir, "missing"), dest); err == nil {
		t.Error("installFrom of a missing file succeeded")
	}
}

// TestExec: member-init becomes the command it was given, with its arguments and environment.
// The exec happens in a child process (this test binary, told by an environment variable).
func TestExec(t *testing.T) {
	if os.Getenv("MEMBERINIT_TEST_EXEC") == "1" {
		err := Exec(Options{Exec: []string{"/bin/sh", "-c", `echo "exec'd $0 $1 $MEMBERINIT_TEST_MARK"`, "a", "b"}})
		t.Fatalf("Exec returned: %v", err)
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh to exec")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExec$")
	cmd.Env = append(os.Environ(), "MEMBERINIT_TEST_EXEC=1", "MEMBERINIT_TEST_MARK=kept")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "exec'd a b kept" {
		t.Errorf("exec'd child: %v, output %q", err, out)
	}
	if err := Exec(Options{Exec: []string{"/nonexistent/etcd"}}); err == nil {
		t.Error("Exec of a missing binary returned nil")
	}
}

// freeAddr is a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// probe returns the status code of a GET, or 0 when nothing answers.
func probe(url string) int {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	return resp.StatusCode
}

// TestRunAnswersLivenessWhileWaiting: while a member waits to be added, its liveness probe
// is answered as alive and its readiness probe as not ready; the address is free for etcd
// once Run returns.
func TestRunAnswersLivenessWhileWaiting(t *testing.T) {
	t.Parallel()
	seed := etcdtest.StartCluster(t, 1)[0]
	joiner := etcdtest.Reserve(t, "m1")
	addr := freeAddr(t)
	o := Options{DataDir: joiner.Dir, PeerURL: joiner.PeerURL, ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{seed.ClientURL}, PollInterval: 10 * time.Millisecond,
		LivenessAddr: addr, LivenessPath: "/health?serializable=true"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	defer cancel()
	out := &syncBuffer{}
	done := start(ctx, o, etcdutil.NewFactory(0, 0), out)

	eventually(t, "the liveness probe is answered", func() bool { return probe("http://"+addr+o.LivenessPath) == http.StatusOK })
	for _, path := range []string{"/health", "/readyz", "/health?serializable=false"} {
		if code := probe("http://" + addr + path); code != http.StatusServiceUnavailable {
			t.Errorf("GET %s while waiting = %d, want 503: the member is not ready", path, code)
		}
	}

	addLearner(ctx, t, seed, joiner.PeerURL)
	waitStarts(t, done, out)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the liveness address is still taken once Run returned, etcd could not listen: %v", err)
	}
	ln.Close()
}
