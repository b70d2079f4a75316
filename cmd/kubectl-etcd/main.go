// Command kubectl-etcd is the kubectl plugin of etcd-operator (kubectl etcd ...; see
// docs/plugin.md). main only wires: signals, the client libraries' logging, the command.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/etcd-operator/etcd-operator/pkg/plugin"
)

func main() {
	// client-go's port-forward reports a connection the pod refused (a member whose etcd is
	// down) through klog; the command says what a member did not answer in its own words.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	klog.SetOutput(io.Discard)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := plugin.NewCommand(os.Stdout, os.Stderr).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}
