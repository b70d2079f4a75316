package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// agentBinary is the binary of the subcommands the operator's pods run
// (cmd/etcd-operator-agent), beside this one in the image.
const agentBinary = "etcd-operator-agent"

// agentCommands are the subcommands the pods the operator makes give the image's entrypoint,
// this binary, and which the agent binary runs. Pods made by every earlier version name them
// this way too: they keep working on this image.
var agentCommands = []string{memberinit.Command, memberinit.InstallCommand, snapshot.Command, memberinit.FetchCommand}

// execAgent replaces the process with the agent binary beside this one, given args (the
// subcommand first) and the same environment. The agent is then the process the pod runs: it
// gets the pod's signals, and `install` copies the agent, which is what a member pod runs
// member-init from. It returns only if the exec failed.
func execAgent(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the agent binary: %w", err)
	}
	agent := filepath.Join(filepath.Dir(self), agentBinary)
	err = syscall.Exec(agent, append([]string{agent}, args...), os.Environ())
	return fmt.Errorf("running %s %s: %w", agent, args[0], err)
}
