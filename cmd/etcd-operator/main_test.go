package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/deptest"
)

// runMainEnv, when set, makes the test binary run main instead of the tests: the tests run
// a copy of it as the image's entrypoint.
const runMainEnv = "ETCD_OPERATOR_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) != "" {
		main()
		return
	}
	os.Exit(m.Run())
}

// agentOnly are the packages (and their subpackages) that only the agent's subcommands use:
// the S3 client and what it links. The operator's process never calls a store, and every
// package it links costs it resident memory (its code's pages, its init).
var agentOnly = []string{
	"github.com/etcd-operator/etcd-operator/pkg/objstore/s3",
	"github.com/minio",
	"github.com/klauspost",
	"golang.org/x/crypto/x509roots",
}

func TestOperatorLinksNoAgentPackage(t *testing.T) {
	for _, p := range deptest.Deps(t) {
		for _, a := range agentOnly {
			if deptest.Under(p.ImportPath, a) {
				t.Errorf("the operator's binary links %s, which only the agent binary needs", p.ImportPath)
			}
		}
	}
}

// A pod's subcommand given to the image's entrypoint runs in the agent binary beside it, with
// the same arguments; anything else runs the operator, in this process.
func TestAgentCommandsExecTheAgent(t *testing.T) {
	dir := t.TempDir()
	entrypoint := filepath.Join(dir, "etcd-operator")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, self, entrypoint, 0o755)
	// The agent stands in for cmd/etcd-operator-agent: it writes the arguments it got.
	got := filepath.Join(dir, "args")
	agent := filepath.Join(dir, agentBinary)
	script := "#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" >'" + got + "'\n"
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sub := range agentCommands {
		os.Remove(got)
		args := []string{sub, "--to=/opt/x", "--", "/usr/local/bin/etcd"}
		if out, err := runEntrypoint(entrypoint, args...); err != nil {
			t.Fatalf("%s: %v\n%s", sub, err, out)
		}
		b, err := os.ReadFile(got)
		if err != nil {
			t.Fatalf("%s: the agent did not run: %v", sub, err)
		}
		if want := append([]string{agent}, args...); !slices.Equal(strings.Fields(string(b)), want) {
			t.Errorf("%s: the agent ran with %q, want %q", sub, strings.Fields(string(b)), want)
		}
	}
	os.Remove(got)
	if out, err := runEntrypoint(entrypoint, "--help"); err != nil || !strings.Contains(out, "-member-init-image") {
		t.Errorf("--help: %v, want the operator's flags:\n%s", err, out)
	}
	if _, err := os.Stat(got); err == nil {
		t.Error("the operator's own flags ran the agent")
	}
}

func runEntrypoint(path string, args ...string) (string, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}
