package memberinit

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

// syncBuffer is a bytes.Buffer safe to read while Run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// countingFactory counts the clients opened and the member lists asked for and answered.
type countingFactory struct {
	etcdutil.Factory
	opened, asked, answered atomic.Int32
}

func (f *countingFactory) New(endpoints []string, conn etcdutil.ConnConfig) (etcdutil.Client, error) {
	f.opened.Add(1)
	cli, err := f.Factory.New(endpoints, conn)
	if err != nil {
		return nil, err
	}
	return &countingClient{Client: cli, f: f}, nil
}

type countingClient struct {
	etcdutil.Client
	f *countingFactory
}

func (c *countingClient) MemberList(ctx context.Context) ([]etcdutil.Member, error) {
	c.f.asked.Add(1)
	ms, err := c.Client.MemberList(ctx)
	if err == nil {
		c.f.answered.Add(1)
	}
	return ms, err
}

// eventually polls cond until it holds, failing the test after waitTimeout.
func eventually(t *testing.T, desc string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", desc, waitTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// start runs Run in the background; the channel gets its result.
func start(ctx context.Context, o Options, f etcdutil.Factory, out *syncBuffer) <-chan error {
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, f, out) }()
	return done
}

// addLearner adds the member with peerURL as a learner, through seed.
func addLearner(ctx context.Context, t *testing.T, seed *etcdtest.Member, peerURL string) {
	t.Helper()
	cli, err := etcdutil.NewFactory(0, 0).New([]string{seed.ClientURL}, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatalf("opening client: %v", err)
	}
	defer cli.Close()
	if _, err := cli.MemberAddAsLearner(ctx, peerURL); err != nil {
		t.Fatalf("MemberAddAsLearner: %v", err)
	}
}

// waitStarts waits for Run, once its member is added, to return nil within waitTimeout.
func waitStarts(t *testing.T, done <-chan error, out *syncBuffer) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v\n%s", err, out)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Run still waiting %s after the member was added\n%s", waitTimeout, out)
	}
}

func TestParse(t *testing.T) {
	o, err := Parse([]string{"--data-dir=/d", "--peer-url=http://m2.peers.ns.svc:2380", "--initial-cluster-state=existing",
		"--endpoints=http://m0.peers.ns.svc:2379, http://m1.peers.ns.svc:2379", "--poll-interval=1s"})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Options{DataDir: "/d", PeerURL: "http://m2.peers.ns.svc:2380", ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{"http://m0.peers.ns.svc:2379", "http://m1.peers.ns.svc:2379"}, PollInterval: time.Second}
	if o.DataDir != want.DataDir || o.PeerURL != want.PeerURL || o.ClusterState != want.ClusterState ||
		strings.Join(o.Endpoints, " ") != strings.Join(want.Endpoints, " ") || o.PollInterval != want.PollInterval {
		t.Errorf("Parse = %+v, want %+v", o, want)
	}
	seed, err := Parse([]string{"--data-dir=/d", "--peer-url=http://m0.peers.ns.svc:2380", "--initial-cluster-state=new", "--endpoints="})
	if err != nil {
		t.Fatalf("Parse of the first member's flags: %v", err)
	}
	if seed.PollInterval != DefaultPollInterval || len(seed.Endpoints) != 0 || seed.MemberIDFile != "" || seed.TerminationLog != DefaultTerminationLog {
		t.Errorf("Parse of the first member's flags = %+v", seed)
	}

	base := []string{"--data-dir=/d", "--peer-url=http://m2.peers.ns.svc:2380", "--initial-cluster-state=existing", "--endpoints=http://m0.peers.ns.svc:2379"}
	for name, args := range map[string][]string{
		"no data dir":           {"--peer-url=http://m2.peers.ns.svc:2380", "--initial-cluster-state=existing", "--endpoints=http://m0.peers.ns.svc:2379"},
		"no peer URL":           {"--data-dir=/d", "--initial-cluster-state=existing", "--endpoints=http://m0.peers.ns.svc:2379"},
		"no cluster state":      {"--data-dir=/d", "--peer-url=http://m2.peers.ns.svc:2380", "--endpoints=http://m0.peers.ns.svc:2379"},
		"bad cluster state":     append(base, "--initial-cluster-state=maybe"),
		"own endpoint":          append(base, "--endpoints=http://m0.peers.ns.svc:2379,http://M2.peers.ns.svc:2379"),
		"endpoint without host": append(base, "--endpoints=m0:2379"),
		"zero poll interval":    append(base, "--poll-interval=0s"),
		"extra argument":        append(base, "etcd"),
		"nothing after --":      append(base, "--"),
		"relative command":      append(base, "--", "etcd"),
		"liveness without path": append(base, "--liveness-addr=:2379"),
		"liveness path no /":    append(base, "--liveness-addr=:2379", "--liveness-path=livez"),
	} {
		if _, err := Parse(args); err == nil {
			t.Errorf("%s: Parse(%q) accepted", name, args)
		}
	}
	wrapped, err := Parse(append(base, "--liveness-addr=:2379", "--liveness-path=/health?serializable=true",
		"--member-id-file=/etc/member/id", "--termination-log=/tmp/term",
		"--", "/usr/local/bin/etcd", "--name=m2", "--", "-x"))
	if err != nil {
		t.Fatalf("Parse with a command: %v", err)
	}
	if !slices.Equal(wrapped.Exec, []string{"/usr/local/bin/etcd", "--name=m2", "--", "-x"}) ||
		wrapped.LivenessAddr != ":2379" || wrapped.LivenessPath != "/health?serializable=true" ||
		wrapped.MemberIDFile != "/etc/member/id" || wrapped.TerminationLog != "/tmp/term" {
		t.Errorf("Parse with a command = %+v: everything after the first -- is the command", wrapped)
	}
	if _, err := Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("Parse(-h) = %v, want flag.ErrHelp", err)
	}
}

// The operator renders a member pod's command line with Args; Parse reads it back whole.
func TestArgsRoundTrip(t *testing.T) {
	for name, o := range map[string]Options{
		"joining member": {DataDir: "/var/lib/etcd/data", PeerURL: "http://m2.peers.ns.svc:2380",
			ClusterState: etcdutil.ClusterStateExisting,
			Endpoints:    []string{"http://m0.peers.ns.svc:2379", "http://m1.peers.ns.svc:2379"},
			PollInterval: DefaultPollInterval, DNSWait: DefaultDNSWait,
			LivenessAddr: ":2379", LivenessPath: "/health?serializable=true",
			MemberIDFile: "/etc/member/id", TerminationLog: DefaultTerminationLog,
			Exec: []string{"/usr/local/bin/etcd", "--name=m2", "--", "-x"}},
		"other durations, no command": {DataDir: "/d", PeerURL: "http://m1.peers.ns.svc:2380",
			ClusterState: etcdutil.ClusterStateExisting, Endpoints: []string{"http://m0.peers.ns.svc:2379"},
			PollInterval: time.Second, DNSWait: 5 * time.Second, TerminationLog: "/tmp/term"},
		"first member": {DataDir: "/d", PeerURL: "http://m0.peers.ns.svc:2380", ClusterState: etcdutil.ClusterStateNew,
			PollInterval: DefaultPollInterval, DNSWait: 0, MemberIDFile: "/etc/member/id", TerminationLog: DefaultTerminationLog},
	} {
		got, err := Parse(o.Args())
		if err != nil {
			t.Errorf("%s: Parse(%q): %v", name, o.Args(), err)
			continue
		}
		if !reflect.DeepEqual(got, o) {
			t.Errorf("%s: Parse(Args()) = %+v, want %+v", name, got, o)
		}
	}
	// Options that leave the termination log and member ID file out (pods of the operator
	// before them) render the same arguments as before, and member-init writes to the default.
	o := Options{DataDir: "/d", PeerURL: "http://m0.peers.ns.svc:2380", ClusterState: etcdutil.ClusterStateNew,
		PollInterval: DefaultPollInterval, DNSWait: DefaultDNSWait}
	args := o.Args()
	if want := []string{"--data-dir=/d", "--peer-url=http://m0.peers.ns.svc:2380", "--initial-cluster-state=new", "--endpoints="}; !slices.Equal(args, want) {
		t.Errorf("Args() = %q, want %q", args, want)
	}
	if got, err := Parse(args); err != nil || got.TerminationLog != DefaultTerminationLog || got.MemberIDFile != "" {
		t.Errorf("Parse(%q) = %+v, %v; want the default termination log and no member ID file", args, got, err)
	}
}

// TestRunStartsAtOnce: the first member of a new cluster, and a member that has data,
// start without asking anyone, even when no member answers.
func TestRunStartsAtOnce(t *testing.T) {
	t.Parallel()
	// Real data of a member that has stopped, and with it the only member of its cluster.
	stopped := etcdtest.StartCluster(t, 1)[0]
	stopped.Stop()
	gone := etcdtest.Reserve(t, "gone")
	for name, o := range map[string]Options{
		"first member of a new cluster": {DataDir: t.TempDir(), PeerURL: "http://m0.peers.ns.svc:2380",
			ClusterState: etcdutil.ClusterStateNew, PollInterval: time.Millisecond},
		"restarted with data, no quorum": {DataDir: stopped.Dir, PeerURL: stopped.PeerURL,
			ClusterState: etcdutil.ClusterStateExisting, Endpoints: []string{gone.ClientURL}, PollInterval: time.Millisecond},
		// The operator's member ID file says nothing yet: missing, or empty.
		"first member, no member ID file yet": {DataDir: t.TempDir(), PeerURL: "http://m0.peers.ns.svc:2380",
			ClusterState: etcdutil.ClusterStateNew, PollInterval: time.Millisecond,
			MemberIDFile: filepath.Join(t.TempDir(), "missing")},
		"first member, empty member ID file": {DataDir: t.TempDir(), PeerURL: "http://m0.peers.ns.svc:2380",
			ClusterState: etcdutil.ClusterStateNew, PollInterval: time.Millisecond, MemberIDFile: idFile(t, " \n")},
		// A member with data starts whatever the file says: it has not lost anything.
		"restarted with data and its member ID": {DataDir: stopped.Dir, PeerURL: stopped.PeerURL,
			ClusterState: etcdutil.ClusterStateExisting, Endpoints: []string{gone.ClientURL}, PollInterval: time.Millisecond,
			MemberIDFile: idFile(t, "8e9e05c52164694d\n")},
		// The only member of a cluster (a survivor restarted without --force-new-cluster)
		// has nobody to ask, and needs nobody: its data is there.
		"only member restarted with data": {DataDir: stopped.Dir, PeerURL: stopped.PeerURL,
			ClusterState: etcdutil.ClusterStateExisting, PollInterval: time.Millisecond, MemberIDFile: idFile(t, "8e9e05c52164694d")},
		"seed restarted with data and its member ID": {DataDir: stopped.Dir, PeerURL: stopped.PeerURL,
			ClusterState: etcdutil.ClusterStateNew, PollInterval: time.Millisecond, MemberIDFile: idFile(t, "8e9e05c52164694d")},
	} {
		t.Run(name, func(t *testing.T) {
			f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			out := &syncBuffer{}
			begin := time.Now()
			if err := Run(ctx, o, f, out); err != nil {
				t.Fatalf("Run: %v\n%s", err, out)
			}
			if d := time.Since(begin); d > time.Second {
				t.Errorf("Run took %s", d)
			}
			if n := f.opened.Load(); n != 0 {
				t.Errorf("Run opened %d etcd clients; it must not ask anyone", n)
			}
			if !strings.Contains(out.String(), "starting etcd") {
				t.Errorf("Run logged %q", out)
			}
		})
	}
}

// TestRunWithoutEndpoints: a member of an existing cluster without data and without members
// to ask cannot learn that it was added: it fails at once rather than wait for nothing.
func TestRunWithoutEndpoints(t *testing.T) {
	o := Options{DataDir: t.TempDir(), PeerURL: "http://m1.peers.ns.svc:2380", ClusterState: etcdutil.ClusterStateExisting,
		PollInterval: time.Millisecond}
	f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
	err := Run(context.Background(), o, f, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "--endpoints") {
		t.Errorf("Run = %v, want an error about --endpoints", err)
	}
	if n := f.opened.Load(); n != 0 {
		t.Errorf("Run opened %d etcd clients", n)
	}
}

// TestRunWaitsUntilAdded: a joining member waits while the cluster answers without it, and
// starts soon after the operator adds it; etcd then joins with the flags it was given.
func TestRunWaitsUntilAdded(t *testing.T) {
	t.Parallel()
	seed := etcdtest.StartCluster(t, 1)[0]
	joiner := etcdtest.Reserve(t, "m1")
	down := etcdtest.Reserve(t, "down") // a member that does not answer is passed over
	o := Options{DataDir: joiner.Dir, PeerURL: joiner.PeerURL, ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{down.ClientURL, seed.ClientURL}, PollInterval: 10 * time.Millisecond}
	f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	defer cancel()
	out := &syncBuffer{}
	done := start(ctx, o, f, out)

	eventually(t, "the cluster answers Run three times", func() bool { return f.answered.Load() >= 3 })
	select {
	case err := <-done:
		t.Fatalf("Run returned before the member was added: %v\n%s", err, out)
	default:
	}

	addLearner(ctx, t, seed, joiner.PeerURL)
	added := time.Now()
	waitStarts(t, done, out)
	if d := time.Since(added); d > 2*time.Second {
		t.Errorf("Run noticed the member %s after it was added; it polls every %s", d, o.PollInterval)
	}
	if !strings.Contains(out.String(), "member added") {
		t.Errorf("Run logged %q", out)
	}
	joiner.Join(t, []*etcdtest.Member{seed})
}

// TestRunLogsChangesNotPolls: many polls that see the same thing make one line.
func TestRunLogsChangesNotPolls(t *testing.T) {
	t.Parallel()
	seed := etcdtest.StartCluster(t, 1)[0]
	o := Options{DataDir: t.TempDir(), PeerURL: etcdtest.Reserve(t, "never").PeerURL, ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{seed.ClientURL}, PollInterval: time.Millisecond}
	f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := start(ctx, o, f, out)
	eventually(t, "50 polls", func() bool { return f.answered.Load() >= 50 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v, want context.Canceled", err)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 1 {
		t.Errorf("Run logged %d lines for %d polls that saw the same:\n%s", lines, f.answered.Load(), out)
	}
}

func TestProgress(t *testing.T) {
	var out bytes.Buffer
	log := newLogger(&out)
	t0 := time.Now()
	p := progress{log: logrus.NewEntry(log), state: stateNotListed, logged: t0}
	refused := errors.New("listing members: connection refused")
	for _, step := range []struct {
		at    time.Duration
		err   error
		lines int // lines logged so far
	}{
		{100 * time.Millisecond, nil, 0},
		{200 * time.Millisecond, refused, 0}, // a change, but within 5 s of the last line
		{5 * time.Second, refused, 1},        // the change is told once 5 s have passed
		{6 * time.Second, refused, 1},
		{7 * time.Second, nil, 1},
		{10 * time.Second, nil, 2},
		{20 * time.Second, nil, 2},
	} {
		p.observe(step.err, t0.Add(step.at))
		if got := strings.Count(out.String(), "\n"); got != step.lines {
			t.Fatalf("after the poll at %s: %d lines, want %d:\n%s", step.at, got, step.lines, out.String())
		}
	}
	if !strings.Contains(out.String(), "connection refused") {
		t.Errorf("the error is not logged:\n%s", out.String())
	}
}

// TestRunHonoursCancel: Run returns when its context ends, also in the middle of a call to
// a member that does not answer.
func TestRunHonoursCancel(t *testing.T) {
	t.Parallel()
	gone := etcdtest.Reserve(t, "gone")
	o := Options{DataDir: t.TempDir(), PeerURL: "http://m1.peers.ns.svc:2380", ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{gone.ClientURL}, PollInterval: 10 * time.Millisecond}
	f := &countingFactory{Factory: etcdutil.NewFactory(0, time.Minute)}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := start(ctx, o, f, out)
	eventually(t, "Run asks for the member list", func() bool { return f.asked.Load() >= 1 })
	cancelled := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run ignored the cancellation")
	}
	if d := time.Since(cancelled); d > time.Second {
		t.Errorf("Run returned %s after the cancellation; its call timeout is a minute", d)
	}
}

// TestHasData: an empty or missing data dir holds no member; etcd's member/wal or
// member/snap does.
func TestHasData(t *testing.T) {
	for name, dirs := range map[string][]string{"empty": nil, "wal": {"member/wal"}, "snap": {"member/snap"}, "other": {"lost+found"}} {
		dir := t.TempDir()
		for _, d := range dirs {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		got, err := hasData(dir)
		if err != nil {
			t.Fatalf("%s: hasData: %v", name, err)
		}
		if want := name == "wal" || name == "snap"; got != want {
			t.Errorf("%s: hasData = %v, want %v", name, got, want)
		}
	}
	if got, err := hasData(filepath.Join(t.TempDir(), "missing")); got || err != nil {
		t.Errorf("hasData of a missing dir = %v, %v", got, err)
	}
}

// switchDNS serves a host once told to; it counts the questions.
type switchDNS struct {
	mu     sync.Mutex
	served map[string]bool
	err    error
	asked  int
}

func (d *switchDNS) Serves(_ context.Context, host string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked++
	return d.served[host], d.err
}

func (d *switchDNS) set(host string, served bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.served[host] = served
}

func (d *switchDNS) questions() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asked
}

// TestRunDialsOnlyServedNames: the members' names are not dialled (no client is opened,
// which would resolve them) until cluster DNS serves every one of them.
func TestRunDialsOnlyServedNames(t *testing.T) {
	t.Parallel()
	seed := etcdtest.StartCluster(t, 1)[0]
	joiner := etcdtest.Reserve(t, "m1")
	dns := &switchDNS{served: map[string]bool{}}
	o := Options{DataDir: joiner.Dir, PeerURL: joiner.PeerURL, ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{seed.ClientURL}, PollInterval: 10 * time.Millisecond, DNS: dns, DNSWait: time.Hour}
	f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	defer cancel()
	out := &syncBuffer{}
	done := start(ctx, o, f, out)

	eventually(t, "DNS asked five times", func() bool { return dns.questions() >= 5 })
	if n := f.opened.Load(); n != 0 {
		t.Fatalf("opened %d etcd clients before DNS served the members' names", n)
	}
	u, err := url.Parse(seed.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	dns.set(u.Hostname(), true)
	eventually(t, "the member list asked once DNS serves the name", func() bool { return f.asked.Load() >= 1 })
	asked := dns.questions()

	addLearner(ctx, t, seed, joiner.PeerURL)
	waitStarts(t, done, out)
	if n := dns.questions(); n != asked {
		t.Errorf("DNS asked %d more times after it served every name", n-asked)
	}
	if !strings.Contains(out.String(), "waiting for cluster DNS") || !strings.Contains(out.String(), "cluster DNS serves") {
		t.Errorf("the DNS wait is not logged:\n%s", out)
	}
}

// TestRunDialsAfterDNSWait: a DNS server that never confirms (it fails, or answers the
// probe's query type differently) holds the member back for DNSWait at most.
func TestRunDialsAfterDNSWait(t *testing.T) {
	t.Parallel()
	seed := etcdtest.StartCluster(t, 1)[0]
	o := Options{DataDir: t.TempDir(), PeerURL: etcdtest.Reserve(t, "never").PeerURL, ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{seed.ClientURL}, PollInterval: 10 * time.Millisecond,
		DNS: &switchDNS{served: map[string]bool{}, err: errors.New("i/o timeout")}, DNSWait: 100 * time.Millisecond}
	f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	begin := time.Now()
	done := start(ctx, o, f, out)
	eventually(t, "the member list asked", func() bool { return f.answered.Load() >= 1 })
	if d := time.Since(begin); d < o.DNSWait {
		t.Errorf("dialled after %s, before the DNS wait of %s ended", d, o.DNSWait)
	}
	cancel()
	<-done
	if !strings.Contains(out.String(), "dialling them anyway") || !strings.Contains(out.String(), "i/o timeout") {
		t.Errorf("giving up on DNS is not logged with its reason:\n%s", out)
	}
}
