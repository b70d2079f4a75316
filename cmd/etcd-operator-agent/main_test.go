package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/mem"

	"github.com/etcd-operator/etcd-operator/pkg/deptest"
)

// runMainEnv, when set, makes the test binary run main instead of the tests.
const runMainEnv = "ETCD_OPERATOR_AGENT_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) != "" {
		main()
		return
	}
	os.Exit(m.Run())
}

// Every member pod copies this binary and runs it beside etcd: it links none of the
// Kubernetes API's packages, which are most of the operator's binary.
func TestAgentLinksNoKubernetesPackage(t *testing.T) {
	for _, p := range deptest.Deps(t) {
		if deptest.Under(p.ImportPath, "k8s.io") || deptest.Under(p.ImportPath, "sigs.k8s.io") {
			t.Errorf("the agent binary links %s", p.ImportPath)
		}
	}
}

// install copies the running binary, the agent, which member pods then run member-init from.
func TestInstallCopiesTheAgent(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "etcd-operator")
	cmd := exec.Command(self, "install", "--to="+to)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(to)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("install wrote %d bytes (%v), not the %d of the running binary", len(got), err, len(want))
	}
}

func TestUnknownSubcommandFails(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"--kubeconfig=x"}, {"operator"}} {
		cmd := exec.Command(self, args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "usage: etcd-operator-agent") {
			t.Errorf("%q: %v, want a usage error:\n%s", args, err, out)
		}
	}
}

// A message of etcd's snapshot stream (32 KiB of the database and a few bytes) is read into a
// buffer of the agent's gRPC pool of 64 KiB, not one of gRPC's default pool of 1 MiB, which
// gRPC zeroes whole for each message.
func TestSnapshotMessagesGetBuffersOfTheirSize(t *testing.T) {
	pool := mem.DefaultBufferPool()
	buf := pool.Get(32<<10 + 16)
	defer pool.Put(buf)
	if c := cap(*buf); c > 64<<10 {
		t.Errorf("a buffer of %d bytes for a message of a snapshot of %d", c, 32<<10+16)
	}
}
