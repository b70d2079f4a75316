// Package memberinit holds a joining member's etcd back until the operator has added the
// member to the cluster (`etcd-operator member-init`), so that etcd never starts with an
// --initial-cluster the cluster would refuse, which would only put the pod into
// CrashLoopBackOff. The etcd image has no shell, so the agent binary of the operator's image
// does it: an init container copies the binary into a volume the etcd container shares
// (Install), and the etcd container runs member-init, which execs etcd once the member is
// listed (Exec). Waiting in the etcd container itself, rather than in an init container,
// spares every joining member the kubelet's noticing that an init container has exited (its
// pod lifecycle relist runs once a second) and starting another container: the member's etcd
// starts within one poll of being added. While it waits, member-init answers etcd's liveness
// probe, so that a long wait (a cluster without quorum) does not get the container restarted
// and backed off.
//
// It never looks up its own member's DNS name: the operator adds the member only once the
// pod's record is published, and an earlier lookup would make CoreDNS cache the negative
// answer for its negative-cache TTL (see dnsutil.TrustAfter), which etcd's peers would then
// meet too. It asks the members already
// running, by their names, and matches itself by its peer URL, which etcd lists for an
// added member before it has started. It dials those names only once cluster DNS serves
// them (asked without caching a negative answer, see package dnsutil): the operator creates
// a pod while the members before it are still starting, the seed's included.
//
// It also refuses to start etcd on an empty data dir for a member that has started before:
// its data dir was wiped (a claim emptied by hand, a memory-backed volume lost with its node's
// reboot while the pod stayed). etcd would bootstrap a new, empty cluster in its place (the
// seed, whose cluster state is new) or crash on a raft log that its peers expect it to have.
// A member has started before when the operator says so, in the member ID it publishes on
// the pod (--member-id-file, an annotation through the downward API), or when etcd lists it
// by name, which a member publishes only once it has started. The refusal is written as the
// container's termination message (DataLostPrefix), where the operator reads it, and the
// operator replaces the member.
package memberinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// Run returns nil when etcd may start: at once for a member whose data dir holds data (a
// restarted member must start even when the cluster has no quorum, which it may be needed
// for) and for the first member of a new cluster; otherwise once the member list, asked
// through o.Endpoints, lists a member with exactly o.PeerURL. It waits for that as long as
// it takes: giving up would only restart the pod. It returns an error when ctx ends first,
// and one that wraps ErrDataLost, without waiting, when a member that has started before
// has no data. Progress is logged to out.
func Run(ctx context.Context, o Options, f etcdutil.Factory, out io.Writer) error {
	log := newLogger(out).WithField("peerURL", o.PeerURL)
	if err := o.Validate(); err != nil {
		return fmt.Errorf("validating options: %w", err)
	}
	has, err := hasData(o.DataDir)
	if err != nil {
		return err
	}
	if has {
		log.WithField("dataDir", o.DataDir).Info("data directory holds a member: starting etcd")
		return nil
	}
	id, started, err := readMemberID(o.MemberIDFile)
	if err != nil {
		return err
	}
	if started {
		return dataLost(id, o.DataDir, "the operator names it in "+o.MemberIDFile)
	}
	if o.ClusterState == etcdutil.ClusterStateNew && o.Restore.From != "" {
		log.WithField("snapshot", o.Restore.From).Info("restoring the seed of a new cluster from its snapshot")
		// A large snapshot takes longer to restore than the liveness probe's patience.
		if stop := liveWhile(o, log); stop != nil {
			defer stop()
		}
		if err := restore(ctx, o, out); err != nil {
			return err
		}
		log.Info("seed restored: starting etcd")
		return nil
	}
	if o.ClusterState == etcdutil.ClusterStateNew {
		log.Info("member bootstraps a new cluster: starting etcd")
		return nil
	}
	if len(o.Endpoints) == 0 {
		return errors.New("--endpoints is required to join an existing cluster without data: there is no member to ask")
	}
	log = log.WithField("endpoints", strings.Join(o.Endpoints, ","))
	if stop := liveWhile(o, log); stop != nil {
		defer stop()
	}
	if err := waitServed(ctx, o, log); err != nil {
		return err
	}
	conn, err := o.TLS.ConnConfig()
	if err != nil {
		return fmt.Errorf("loading the client certificate: %w", err)
	}
	cli, err := f.New(o.Endpoints, conn)
	if err != nil {
		return fmt.Errorf("opening etcd client: %w", err)
	}
	defer cli.Close()
	return waitAdded(ctx, o, cli, log)
}

// hasData reports whether dataDir holds a member's data (etcd's member/wal or member/snap).
func hasData(dataDir string) (bool, error) {
	for _, d := range []string{"member/wal", "member/snap"} {
		_, err := os.Stat(filepath.Join(dataDir, d))
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, os.ErrNotExist):
			return false, fmt.Errorf("checking data dir %s: %w", dataDir, err)
		}
	}
	return false, nil
}

// newLogger logs in the operator's text format.
func newLogger(out io.Writer) *logrus.Logger {
	log := logrus.New()
	log.SetOutput(out)
	log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "2006-01-02T15:04:05.000Z07:00", DisableColors: true})
	return log
}

// liveWhile answers etcd's liveness probe until the returned stop is called; nil when there is
// no probe to answer or it cannot be answered (only a wait longer than the probe's patience
// is at stake: member-init goes on).
func liveWhile(o Options, log *logrus.Entry) func() {
	if o.LivenessAddr == "" {
		return nil
	}
	stop, err := serveLiveness(o.LivenessAddr, o.LivenessPath)
	if err != nil {
		log.WithError(err).Warn("cannot answer the liveness probe while waiting")
		return nil
	}
	return stop
}
