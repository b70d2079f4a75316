// Package memberinit is the init container of every member pod (`etcd-operator member-init`).
// It holds etcd back until the operator has registered the member, so etcd never starts with
// an --initial-cluster that the cluster would refuse, which would only put the pod into
// CrashLoopBackOff.
//
// It never looks up its own member's DNS name: the operator registers the member only once
// the pod's record is published, and an early lookup would make CoreDNS cache a negative
// answer for up to 30 s.
package memberinit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// progressEvery bounds how often a waiting member logs that it is still waiting.
const progressEvery = 5 * time.Second

// Options are the init container's flags.
type Options struct {
	DataDir      string
	PeerURL      string
	ClusterState string
	Endpoints    []string
	PollInterval time.Duration
}

// Parse reads the flags of `etcd-operator member-init`.
func Parse(args []string) (Options, error) {
	fs := flag.NewFlagSet("member-init", flag.ContinueOnError)
	var o Options
	var endpoints string
	fs.StringVar(&o.DataDir, "data-dir", "", "etcd's data directory; a member that has data starts at once")
	fs.StringVar(&o.PeerURL, "peer-url", "", "this member's peer URL, as registered in the member list")
	fs.StringVar(&o.ClusterState, "initial-cluster-state", "existing", "new (the seed member) or existing")
	fs.StringVar(&endpoints, "endpoints", "", "comma-separated client URLs of the members already in the cluster")
	fs.DurationVar(&o.PollInterval, "poll-interval", 200*time.Millisecond, "how often to ask the member list")
	if err := fs.Parse(args); err != nil {
		return Options{}, err
	}
	for _, e := range strings.Split(endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			o.Endpoints = append(o.Endpoints, e)
		}
	}
	switch {
	case o.DataDir == "" || o.PeerURL == "":
		return Options{}, errors.New("--data-dir and --peer-url are required")
	case o.ClusterState != "new" && o.ClusterState != "existing":
		return Options{}, fmt.Errorf("--initial-cluster-state must be new or existing, not %q", o.ClusterState)
	case o.ClusterState == "existing" && len(o.Endpoints) == 0:
		return Options{}, errors.New("--endpoints is required to join an existing cluster")
	case o.PollInterval <= 0:
		return Options{}, errors.New("--poll-interval must be positive")
	}
	return o, nil
}

// hasData reports whether the data directory already holds a member: a restarted pod keeps
// its data and must start at once, even when the cluster has lost quorum and waits for it.
func hasData(dataDir string) bool {
	for _, d := range []string{"member/wal", "member/snap"} {
		if _, err := os.Stat(filepath.Join(dataDir, d)); err == nil {
			return true
		}
	}
	return false
}

// Run waits until the member may start etcd, or ctx ends.
func Run(ctx context.Context, o Options, f etcdutil.Factory, out io.Writer) error {
	if o.ClusterState == "new" {
		fmt.Fprintln(out, "seed member: starting etcd")
		return nil
	}
	if hasData(o.DataDir) {
		fmt.Fprintf(out, "%s holds a member's data: starting etcd\n", o.DataDir)
		return nil
	}
	cli, err := f.New(o.Endpoints)
	if err != nil {
		return fmt.Errorf("opening etcd client: %w", err)
	}
	defer cli.Close()

	fmt.Fprintf(out, "waiting for %s to be added to the cluster (asking %s)\n", o.PeerURL, strings.Join(o.Endpoints, ","))
	ticker := time.NewTicker(o.PollInterval)
	defer ticker.Stop()
	lastLog := time.Now()
	var lastErr string
	for {
		members, err := cli.MemberList(ctx)
		switch {
		case err == nil:
			for _, m := range members {
				for _, u := range m.PeerURLs {
					if u == o.PeerURL {
						fmt.Fprintf(out, "registered as member %x: starting etcd\n", m.ID)
						return nil
					}
				}
			}
			lastErr = ""
		case err.Error() != lastErr:
			lastErr = err.Error()
			fmt.Fprintf(out, "listing members: %v\n", err)
		}
		if time.Since(lastLog) >= progressEvery {
			fmt.Fprintf(out, "still waiting for %s to be added\n", o.PeerURL)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting to be added: %w", ctx.Err())
		case <-ticker.C:
		}
	}
}
