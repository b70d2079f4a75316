// Command etcd-operator runs the etcd operator. It is the entrypoint of the operator's image,
// whose pods run it too: a member pod's init container as `etcd-operator install`, an
// EtcdBackup's pod as `etcd-operator backup`, the init container of a seed restored from S3 as
// `etcd-operator fetch-snapshot`. Those subcommands are the agent binary's
// (cmd/etcd-operator-agent), beside this one in the image, which this one execs (agent.go):
// the operator's process never links them. main only wires: flags, logger, signals, Run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
	// The IANA time zone database, built in: an EtcdBackupSchedule's spec.timeZone is read
	// with time.LoadLocation, and the operator's distroless image has no /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/etcd-operator/etcd-operator/pkg/operator"
)

func main() {
	if len(os.Args) > 1 && slices.Contains(agentCommands, os.Args[1]) {
		err := execAgent(os.Args[1:])
		fmt.Fprintf(os.Stderr, "etcd-operator: %v\n", err)
		os.Exit(1)
	}
	// The operator does not serve heap profiles: sampling allocations for one would only cost
	// memory (the runtime's profile buckets) and time.
	runtime.MemProfileRate = 0
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := runOperator(ctx, os.Args[1:])
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintf(os.Stderr, "etcd-operator: %v\n", err)
		os.Exit(1)
	}
}

func runOperator(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("etcd-operator", flag.ContinueOnError)
	var o operator.Options
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (subcommands: member-init, install, backup, fetch-snapshot)", fs.Args())
	}
	if err := o.Complete(); err != nil {
		return err
	}
	log, err := operator.NewLogger(o.LogLevel, o.LogFormat, os.Stderr)
	if err != nil {
		return err
	}
	return operator.Run(ctx, &o, log)
}
