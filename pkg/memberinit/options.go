package memberinit

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/dnsutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// Command and InstallCommand are the agent binary's subcommands a member pod runs:
// member-init in the etcd container, install in the init container that copies the binary
// into the pod (Install).
const (
	Command        = "member-init"
	InstallCommand = "install"
)

// DefaultPollInterval is how often a joining member asks for the member list by default.
const DefaultPollInterval = 200 * time.Millisecond

// DefaultDNSWait bounds the wait for cluster DNS to serve the members' names (see
// dnsutil.TrustAfter).
const DefaultDNSWait = dnsutil.TrustAfter

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
	// TLS, when set, is the client certificate and the CA member-init dials the endpoints
	// (https) with: a cluster whose client port uses TLS.
	TLS etcdutil.TLSFiles
	// PollInterval is how often the member list is asked for.
	PollInterval time.Duration
	// LivenessAddr, when set, is where the liveness probe of etcd's container is answered
	// while the member waits: where the kubelet probes etcd, its client address, or its
	// plaintext metrics address when the client port demands certificates. Only LivenessPath
	// (path and query, as the probe asks) is answered as alive, anything else, the readiness
	// probe included, as unavailable.
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
	// Restore, when its From is set, restores the seed of a new cluster from a snapshot
	// before its first start (see restore).
	Restore Restore
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
	fs.StringVar(&o.TLS.CertFile, "cert-file", "", "client certificate to dial the endpoints with (https endpoints)")
	fs.StringVar(&o.TLS.KeyFile, "key-file", "", "key of --cert-file")
	fs.StringVar(&o.TLS.CAFile, "ca-file", "", "CA certificates to verify the endpoints' server certificates by")
	fs.DurationVar(&o.PollInterval, "poll-interval", DefaultPollInterval, "how often to ask for the member list")
	fs.DurationVar(&o.DNSWait, "dns-wait", DefaultDNSWait, "how long to wait for cluster DNS to serve the members' names before dialling them anyway")
	fs.StringVar(&o.LivenessAddr, "liveness-addr", "", "address to answer the liveness probe on while waiting (where the kubelet probes etcd)")
	fs.StringVar(&o.LivenessPath, "liveness-path", "", "path and query of the liveness probe answered while waiting")
	fs.StringVar(&o.MemberIDFile, "member-id-file", "", "file holding this member's ID in hex once it has started; with an empty data dir, etcd is not started")
	fs.StringVar(&o.Restore.From, "restore-from", "", "snapshot to restore the seed of a new cluster from, before its first start")
	fs.Int64Var(&o.Restore.BumpRevision, "restore-bump-revision", 0, "etcdutl snapshot restore --bump-revision")
	fs.BoolVar(&o.Restore.MarkCompacted, "restore-mark-compacted", false, "etcdutl snapshot restore --mark-compacted")
	fs.StringVar(&o.Restore.Etcdutl, "etcdutl", "", "etcdutl of the member's etcd version (default "+DefaultEtcdutl+")")
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
	if !o.TLS.IsZero() {
		args = append(args, "--cert-file="+o.TLS.CertFile, "--key-file="+o.TLS.KeyFile, "--ca-file="+o.TLS.CAFile)
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
	if o.Restore.From != "" {
		args = append(args, "--restore-from="+o.Restore.From)
		if o.Restore.BumpRevision > 0 {
			args = append(args, "--restore-bump-revision="+strconv.FormatInt(o.Restore.BumpRevision, 10))
		}
		if o.Restore.MarkCompacted {
			args = append(args, "--restore-mark-compacted")
		}
		if o.Restore.Etcdutl != "" {
			args = append(args, "--etcdutl="+o.Restore.Etcdutl)
		}
	}
	if len(o.Exec) > 0 {
		args = append(append(args, "--"), o.Exec...)
	}
	return args
}

// endpointScheme is the scheme of the endpoints member-init dials with the given files.
func endpointScheme(f etcdutil.TLSFiles) string {
	if f.IsZero() {
		return "http"
	}
	return "https"
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
	if err := o.TLS.Validate(); err != nil {
		return fmt.Errorf("--cert-file, --key-file and --ca-file: %w", err)
	}
	for _, e := range o.Endpoints {
		u, err := url.Parse(e)
		if err != nil || u.Hostname() == "" {
			return fmt.Errorf("endpoint %q is not a URL with a host", e)
		}
		// An endpoint dialled in the wrong scheme fails every call: refused here, it is a
		// message in the pod's log instead of a wait that never ends.
		if want := endpointScheme(o.TLS); u.Scheme != want {
			return fmt.Errorf("endpoint %s must be %s://, as the client certificate flags say", e, want)
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
	if o.Restore.From != "" && (o.ClusterState != etcdutil.ClusterStateNew || len(o.Exec) == 0) {
		return errors.New("--restore-from is only for the seed of a new cluster (--initial-cluster-state=new), with etcd's command after --")
	}
	if (o.Restore.BumpRevision > 0) != o.Restore.MarkCompacted || o.Restore.BumpRevision < 0 {
		return errors.New("--restore-bump-revision (positive) and --restore-mark-compacted go together, as etcdutl takes them")
	}
	if len(o.Exec) > 0 && !filepath.IsAbs(o.Exec[0]) {
		return fmt.Errorf("the command after -- must be an absolute path, not %q", o.Exec[0])
	}
	return nil
}
