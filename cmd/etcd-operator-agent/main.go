// Command etcd-operator-agent runs what the operator's image does outside the operator's
// process. In a member pod, `install` copies this binary into the pod and the etcd container
// runs the copy as `member-init`, which holds a joining member's etcd back until the member is
// added (and restores a new cluster's seed from a snapshot). An EtcdBackup's pod runs `backup`,
// and the init container of a seed restored from S3 `fetch-snapshot`.
//
// The pods name these subcommands to the image's entrypoint, the operator's binary, which
// execs this one, beside it in the image. Two binaries keep the operator's process from linking
// what only these pods need (the S3 client, the snapshot's streaming and checks), and the
// binary member pods copy from linking the Kubernetes clients. main only wires: flags, logger,
// signals, Run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/experimental"

	"github.com/etcd-operator/etcd-operator/pkg/dnsutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
	"github.com/etcd-operator/etcd-operator/pkg/objstore/s3"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

func init() {
	// The agent's gRPC connections stream snapshots (etcdutil.StreamBufferPool). Set before
	// any is made: a connection reads the default pool when it is made.
	experimental.SetDefaultBufferPool(etcdutil.StreamBufferPool())
}

// name is how errors are prefixed: the pods know this binary by the operator's name.
const name = "etcd-operator"

func main() {
	// No subcommand serves heap profiles: sampling allocations for one would only cost memory
	// (the runtime's profile buckets) and time.
	runtime.MemProfileRate = 0
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var err error
	switch {
	case len(os.Args) < 2:
		err = errors.New(usage)
	case os.Args[1] == memberinit.Command:
		err = runMemberInit(ctx, os.Args[2:])
	case os.Args[1] == memberinit.InstallCommand:
		err = runInstall(os.Args[2:])
	case os.Args[1] == snapshot.Command:
		err = runBackup(ctx, os.Args[2:])
	case os.Args[1] == memberinit.FetchCommand:
		err = runFetch(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q: %s", os.Args[1], usage)
	}
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

const usage = "usage: etcd-operator-agent member-init|install|backup|fetch-snapshot [flags]"

func runMemberInit(ctx context.Context, args []string) error {
	o, err := memberinit.Parse(args)
	if err != nil {
		return err
	}
	// In a pod, the members' names are dialled only once cluster DNS serves them.
	if dns, err := dnsutil.NewFromResolvConf(dnsutil.ResolvConf); err == nil {
		o.DNS = dns
	} else {
		fmt.Fprintf(os.Stderr, "member-init: cannot ask cluster DNS, dialling members without asking: %v\n", err)
	}
	if err := memberinit.Run(ctx, o, etcdutil.NewFactory(0, 0), os.Stdout); err != nil {
		// The operator reads a lost member's refusal from the container's status. Best
		// effort: the error is printed and the container fails either way.
		if werr := memberinit.WriteTermination(o.TerminationLog, err); werr != nil {
			fmt.Fprintf(os.Stderr, "member-init: %v\n", werr)
		}
		return err
	}
	if len(o.Exec) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err // the pod is being stopped: etcd would not get the signal
	}
	return memberinit.Exec(o)
}

func runInstall(args []string) error {
	fs := flag.NewFlagSet(memberinit.InstallCommand, flag.ContinueOnError)
	to := fs.String("to", "", "path to copy this binary to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" || fs.NArg() > 0 {
		return errors.New("usage: etcd-operator install --to=PATH")
	}
	return memberinit.Install(*to)
}

// runBackup takes one snapshot (or deletes one) in an EtcdBackup's pod and reports the outcome
// as the container's termination message, which the operator reads.
func runBackup(ctx context.Context, args []string) error {
	a, err := snapshot.Parse(args)
	if err != nil {
		return err
	}
	entry := newLogger().WithField("backup", a.Name)
	var store *s3.Store
	if !a.S3.IsZero() {
		if store, err = s3.Open(a.S3); err != nil {
			if werr := snapshot.ReportOf(snapshot.Result{}, err).Write(a.TerminationLog); werr != nil {
				entry.WithError(werr).Warn("Cannot write the termination message")
			}
			return err
		}
	}
	if len(a.Delete) > 0 {
		if store != nil {
			err = store.Delete(ctx, a.Delete...)
		} else {
			err = snapshot.Delete(a.Root, a.Delete...)
		}
		if werr := snapshot.ReportOf(snapshot.Result{}, err).Write(a.TerminationLog); werr != nil {
			entry.WithError(werr).Warn("Cannot write the termination message")
		}
		return err
	}
	var res snapshot.Result
	if store != nil {
		res, err = snapshot.TakeS3(ctx, a.Options, store, etcdutil.NewFactory(0, 0), entry)
	} else {
		res, err = snapshot.Take(ctx, a.Options, etcdutil.NewFactory(0, 0), entry)
	}
	if werr := snapshot.ReportOf(res, err).Write(a.TerminationLog); werr != nil {
		entry.WithError(werr).Warn("Cannot write the termination message")
	}
	if err != nil {
		return err
	}
	entry.WithFields(map[string]any{"location": res.Location, "revision": res.Revision, "bytes": res.SizeBytes,
		"seconds": res.Seconds}).Info("Snapshot written and verified")
	return nil
}

// runFetch downloads a restored seed's snapshot from S3, in the seed pod's init container;
// a refusal is its termination message, which the operator quotes in the cluster's status.
func runFetch(ctx context.Context, args []string) error {
	o, err := memberinit.ParseFetch(args)
	if err != nil {
		return err
	}
	st, err := s3.Open(o.S3)
	if err == nil {
		err = memberinit.Fetch(ctx, o, st, os.Stdout)
	} else {
		err = fmt.Errorf("%w: %v", memberinit.ErrRestoreFailed, err)
	}
	if err != nil {
		if werr := memberinit.WriteTermination(o.TerminationLog, err); werr != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", memberinit.FetchCommand, werr)
		}
	}
	return err
}

// newLogger logs at info, in the operator's text format (operator.NewLogger, which this
// binary does not link).
func newLogger() *logrus.Logger {
	log := logrus.New()
	log.SetOutput(os.Stderr)
	log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "2006-01-02T15:04:05.000Z07:00", DisableColors: true})
	return log
}
