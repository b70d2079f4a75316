// Package memberinit holds a joining member's etcd back until the operator has added the
// member to the cluster (`etcd-operator member-init`), so that etcd never starts with an
// --initial-cluster the cluster would refuse, which would only put the pod into
// CrashLoopBackOff. The etcd image has no shell, so the operator's own binary does it: an init
// container copies the binary into a volume the etcd container shares (Install), and the etcd
// container runs member-init, which execs etcd once the member is listed (Exec). Waiting in
// the etcd container itself, rather than in an init container, spares every joining member
// the kubelet's noticing that an init container has exited (its pod lifecycle relist runs
// once a second) and starting another container: the member's etcd starts within one poll of
// being added. While it waits, member-init answers etcd's liveness probe, so that a long wait
// (a cluster without quorum) does not get the container restarted and backed off.
//
// It never looks up its own member's DNS name: the operator adds the member only once the
// pod's record is published, and an earlier lookup would make CoreDNS cache the negative
// answer for 30 s, which etcd's peers would then meet too. It asks the members already
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
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/dnsutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// DefaultPollInterval is how often a joining member asks for the member list by default.
const DefaultPollInterval = 200 * time.Millisecond

// DefaultDNSWait bounds the wait for cluster DNS to serve the members' names (see
// dnsutil.TrustAfter).
const DefaultDNSWait = dnsutil.TrustAfter

// progressEvery bounds how often a waiting member logs: one line per change of what it
// sees, no more than one per progressEvery.
const progressEvery = 5 * time.Second

// Options are member-init's flags.
type Options struct {
	// DataDir is etcd's --data-dir. A member whose data dir holds data starts at once.
	DataDir string
	// PeerURL is this member's peer URL, exactly as the operator adds it.
	PeerURL string
	// ClusterState is the --initial-cluster-state etcd will start with.
	ClusterState etcdutil.ClusterState
	// Endpoints are client URLs of the members already in the cluster; never this one's.
	Endpoints []string
	// PollInterval is how often the member list is asked for.
	PollInterval time.Duration
	// LivenessAddr, when set, is where the liveness probe of etcd's container is answered
	// while the member waits (etcd's client address); only LivenessPath (path and query, as
	// the probe asks) is answered as alive, anything else, the readiness probe included, as
	// unavailable.
	LivenessAddr string
	LivenessPath string
	// DNS, when set, is asked whether cluster DNS serves each endpoint's host before the
	// endpoints are dialled; past DNSWait the hosts are dialled anyway.
	DNS     dnsutil.Checker
	DNSWait time.Duration
	// MemberIDFile, when set, is a file that holds this member's etcd ID in hex once the
	// operator knows the member has started; missing or empty until then. A member so named
	// whose data dir holds no data does not start (ErrDataLost).
	MemberIDFile string
	// TerminationLog is where main writes the termination message of a failed Run (see
	// WriteTermination); empty means DefaultTerminationLog.
	TerminationLog string
	// Exec is the command (etcd and its flags) that replaces member-init once etcd may start.
	// Empty in pods made by earlier versions of the operator, where member-init is an init
	// container and only returns: they keep working when they restart with this binary.
	Exec []string
}

// Parse reads the arguments of `etcd-operator member-init [flags] [-- command...]` (args
// without the subcommand). It returns flag.ErrHelp for -h.
func Parse(args []string) (Options, error) {
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
		if len(command) == 0 {
			return Options{}, errors.New("parsing member-init flags: no command after --")
		}
	}
	fs := flag.NewFlagSet("member-init", flag.ContinueOnError)
	var o Options
	var state, endpoints string
	fs.StringVar(&o.DataDir, "data-dir", "", "etcd's data directory; a member whose directory holds data starts at once")
	fs.StringVar(&o.PeerURL, "peer-url", "", "this member's peer URL, exactly as the operator adds it to the cluster")
	fs.StringVar(&state, "initial-cluster-state", "", "new (bootstraps the cluster: start at once) or existing (wait to be added)")
	fs.StringVar(&endpoints, "endpoints", "", "comma-separated client URLs of the members already running, never this member's own")
	fs.DurationVar(&o.PollInterval, "poll-interval", DefaultPollInterval, "how often to ask for the member list")
	fs.DurationVar(&o.DNSWait, "dns-wait", DefaultDNSWait, "how long to wait for cluster DNS to serve the members' names before dialling them anyway")
	fs.StringVar(&o.LivenessAddr, "liveness-addr", "", "address to answer the liveness probe on while waiting (etcd's client address)")
	fs.StringVar(&o.LivenessPath, "liveness-path", "", "path and query of the liveness probe answered while waiting")
	fs.StringVar(&o.MemberIDFile, "member-id-file", "", "file holding this member's ID in hex once it has started; with an empty data dir, etcd is not started")
	fs.StringVar(&o.TerminationLog, "termination-log", DefaultTerminationLog, "file to write the termination message to when etcd is not started")
	if err := fs.Parse(args); err != nil {
		return Options{}, err
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("parsing member-init flags: unexpected arguments %q", fs.Args())
	}
	o.ClusterState = etcdutil.ClusterState(state)
	o.Exec = command
	for _, e := range strings.Split(endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			o.Endpoints = append(o.Endpoints, e)
		}
	}
	if err := o.Validate(); err != nil {
		return Options{}, fmt.Errorf("parsing member-init flags: %w", err)
	}
	return o, nil
}

// Args renders the options as the arguments Parse reads (without the subcommand): the
// operator builds a member pod's command line with it. Durations at their defaults are left
// out (a zero value is not a default: it is written), and so is the command when there is none.
// The termination log is left out at its default and when empty, which means the default.
func (o Options) Args() []string {
	args := []string{
		"--data-dir=" + o.DataDir,
		"--peer-url=" + o.PeerURL,
		"--initial-cluster-state=" + string(o.ClusterState),
		"--endpoints=" + strings.Join(o.Endpoints, ","),
	}
	if o.PollInterval != DefaultPollInterval {
		args = append(args, "--poll-interval="+o.PollInterval.String())
	}
	if o.DNSWait != DefaultDNSWait {
		args = append(args, "--dns-wait="+o.DNSWait.String())
	}
	if o.LivenessAddr != "" {
		args = append(args, "--liveness-addr="+o.LivenessAddr, "--liveness-path="+o.LivenessPath)
	}
	if o.MemberIDFile != "" {
		args = append(args, "--member-id-file="+o.MemberIDFile)
	}
	if o.TerminationLog != "" && o.TerminationLog != DefaultTerminationLog {
		args = append(args, "--termination-log="+o.TerminationLog)
	}
	if len(o.Exec) > 0 {
		args = append(append(args, "--"), o.Exec...)
	}
	return args
}

// Validate checks the options. An endpoint on this member's own host is refused: looking
// it up before the member's DNS record exists is what member-init must never do.
func (o Options) Validate() error {
	if o.DataDir == "" {
		return errors.New("--data-dir is required")
	}
	peer, err := url.Parse(o.PeerURL)
	if err != nil || peer.Hostname() == "" {
		return fmt.Errorf("--peer-url %q is not a URL with a host", o.PeerURL)
	}
	switch o.ClusterState {
	case etcdutil.ClusterStateNew, etcdutil.ClusterStateExisting:
		// A member of an existing cluster needs --endpoints only to wait for being added:
		// the only member of a cluster restarts on its data with none (see Run).
	default:
		return fmt.Errorf("--initial-cluster-state must be %s or %s, not %q", etcdutil.ClusterStateNew, etcdutil.ClusterStateExisting, o.ClusterState)
	}
	for _, e := range o.Endpoints {
		u, err := url.Parse(e)
		if err != nil || u.Hostname() == "" {
			return fmt.Errorf("endpoint %q is not a URL with a host", e)
		}
		if strings.EqualFold(u.Hostname(), peer.Hostname()) {
			return fmt.Errorf("endpoint %s is this member itself (--peer-url %s)", e, o.PeerURL)
		}
	}
	if o.PollInterval <= 0 {
		return fmt.Errorf("--poll-interval must be positive, not %s", o.PollInterval)
	}
	if (o.LivenessAddr == "") != (o.LivenessPath == "") {
		return errors.New("--liveness-addr and --liveness-path go together")
	}
	if o.LivenessPath != "" && !strings.HasPrefix(o.LivenessPath, "/") {
		return fmt.Errorf("--liveness-path %q must start with /", o.LivenessPath)
	}
	if o.DNSWait < 0 {
		return fmt.Errorf("--dns-wait must not be negative, not %s", o.DNSWait)
	}
	if len(o.Exec) > 0 && !filepath.IsAbs(o.Exec[0]) {
		return fmt.Errorf("the command after -- must be an absolute path, not %q", o.Exec[0])
	}
	return nil
}

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
	if o.ClusterState == etcdutil.ClusterStateNew {
		log.Info("member bootstraps a new cluster: starting etcd")
		return nil
	}
	if len(o.Endpoints) == 0 {
		return errors.New("--endpoints is required to join an existing cluster without data: there is no member to ask")
	}
	log = log.WithField("endpoints", strings.Join(o.Endpoints, ","))
	if o.LivenessAddr != "" {
		stop, err := serveLiveness(o.LivenessAddr, o.LivenessPath)
		if err != nil {
			// Only a wait longer than the probe's patience is at stake: wait anyway.
			log.WithError(err).Warn("cannot answer the liveness probe while waiting")
		} else {
			defer stop()
		}
	}
	if err := waitServed(ctx, o, log); err != nil {
		return err
	}
	cli, err := f.New(o.Endpoints, etcdutil.ConnConfig{})
	if err != nil {
		return fmt.Errorf("opening etcd client: %w", err)
	}
	defer cli.Close()
	return waitAdded(ctx, o, cli, log)
}

// waitServed returns once cluster DNS serves the host of every endpoint, or o.DNSWait after
// it started asking, or at once without o.DNS. Opening a client resolves the endpoints'
// names: a "no such host" for a member whose record cluster DNS has not caught up with would
// be cached for 30 s, for this member's etcd and the others to meet too.
func waitServed(ctx context.Context, o Options, log *logrus.Entry) error {
	if o.DNS == nil {
		return nil
	}
	start := time.Now()
	pending := map[string]bool{}
	for _, e := range o.Endpoints {
		u, _ := url.Parse(e) // Validate has parsed every endpoint
		pending[u.Hostname()] = true
	}
	ticker := time.NewTicker(o.PollInterval)
	defer ticker.Stop()
	logged := false
	for {
		var lastErr error
		for host := range pending {
			qctx, cancel := context.WithTimeout(ctx, dnsutil.DefaultTimeout)
			ok, err := o.DNS.Serves(qctx, host)
			cancel()
			if ok {
				delete(pending, host)
			} else if err != nil {
				lastErr = err
			}
		}
		switch waited := time.Since(start); {
		case len(pending) == 0:
			if logged {
				log.WithField("waited", waited.Round(time.Millisecond)).Info("cluster DNS serves the members' names")
			}
			return nil
		case waited >= o.DNSWait:
			log.WithError(lastErr).WithField("notServed", strings.Join(slices.Sorted(maps.Keys(pending)), ",")).
				Warn("cluster DNS does not confirm the members' names; dialling them anyway")
			return nil
		case !logged:
			log.WithError(lastErr).WithField("notServed", strings.Join(slices.Sorted(maps.Keys(pending)), ",")).
				Info("waiting for cluster DNS to serve the members' names")
			logged = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for cluster DNS to serve %v: %w", slices.Sorted(maps.Keys(pending)), ctx.Err())
		case <-ticker.C:
		}
	}
}

// waitAdded polls the member list until it lists o.PeerURL or ctx ends. A member listed with
// a name has started before: it is refused, as its data dir holds no data.
func waitAdded(ctx context.Context, o Options, cli etcdutil.Client, log *logrus.Entry) error {
	start := time.Now()
	log.Info("waiting for the operator to add this member")
	p := progress{log: log, state: stateNotListed, logged: start}
	ticker := time.NewTicker(o.PollInterval)
	defer ticker.Stop()
	for {
		members, err := cli.MemberList(ctx)
		if err == nil {
			if m, ok := find(members, o.PeerURL); ok {
				if m.Name != "" {
					return dataLost(m.ID, o.DataDir, fmt.Sprintf("etcd lists it by its name %s", m.Name))
				}
				log.WithFields(logrus.Fields{
					"id":      fmt.Sprintf("%x", m.ID),
					"learner": m.IsLearner,
					"waited":  time.Since(start).Round(time.Millisecond),
				}).Info("member added: starting etcd")
				return nil
			}
		}
		p.observe(err, time.Now())
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be added: %w", o.PeerURL, ctx.Err())
		case <-ticker.C:
		}
	}
}

func find(members []etcdutil.Member, peerURL string) (etcdutil.Member, bool) {
	for _, m := range members {
		for _, u := range m.PeerURLs {
			if u == peerURL {
				return m, true
			}
		}
	}
	return etcdutil.Member{}, false
}

// stateNotListed is the state of a wait in which the member list answers without this member.
const stateNotListed = "not listed"

// progress logs what a waiting member sees when it changes, at most once per progressEvery,
// instead of once per poll.
type progress struct {
	log *logrus.Entry
	// state is the last state logged: stateNotListed or the text of an error.
	state  string
	logged time.Time
}

// observe takes the result of one poll, made at now.
func (p *progress) observe(err error, now time.Time) {
	state := stateNotListed
	if err != nil {
		state = err.Error()
	}
	if state == p.state || now.Sub(p.logged) < progressEvery {
		return
	}
	p.state, p.logged = state, now
	if err != nil {
		p.log.WithError(err).Warn("cannot list members yet; still trying")
		return
	}
	p.log.Info("members answer; this member is not listed yet")
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
