package dnsutil

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeDNS is a UDP name server on loopback that answers like CoreDNS's kubernetes plugin does
// for a query type it has no records of: NOERROR when the name exists, NXDOMAIN when not.
type fakeDNS struct {
	addr string
	conn net.PacketConn

	mu     sync.Mutex
	names  map[string]bool   // lower-case FQDNs that exist
	rcode  *dnsmessage.RCode // forced answer code; nil: by name
	asked  []dnsmessage.Question
	silent bool
}

func newFakeDNS(t *testing.T, names ...string) *fakeDNS {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDNS{addr: conn.LocalAddr().String(), conn: conn, names: map[string]bool{}}
	for _, n := range names {
		f.names[n] = true
	}
	t.Cleanup(func() { conn.Close() })
	go f.serve()
	return f
}

func (f *fakeDNS) set(mut func(f *fakeDNS)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mut(f)
}

func (f *fakeDNS) questions() []dnsmessage.Question {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

func (f *fakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := f.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		f.mu.Lock()
		f.asked = append(f.asked, q)
		rcode, silent := dnsmessage.RCodeNameError, f.silent
		if f.names[strings.ToLower(q.Name.String())] {
			rcode = dnsmessage.RCodeSuccess
		}
		if f.rcode != nil {
			rcode = *f.rcode
		}
		f.mu.Unlock()
		if silent {
			continue
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RCode: rcode, RecursionDesired: h.RecursionDesired})
		_ = b.StartQuestions()
		_ = b.Question(q)
		msg, _ := b.Finish()
		_, _ = f.conn.WriteTo(msg, from)
	}
}

func TestServes(t *testing.T) {
	dns := newFakeDNS(t, "demo-0.demo.ns.svc.cluster.local.")
	p := &Prober{Servers: []string{dns.addr}, Search: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local"}, Timeout: time.Second}
	ctx := context.Background()

	if ok, err := p.Serves(ctx, "demo-0.demo.ns.svc"); !ok || err != nil {
		t.Errorf("Serves(published name) = %v, %v; want true, nil", ok, err)
	}
	if ok, err := p.Serves(ctx, "demo-1.demo.ns.svc"); ok || err != nil {
		t.Errorf("Serves(unpublished name) = %v, %v; want false, nil", ok, err)
	}
	dns.set(func(f *fakeDNS) { f.names["demo-1.demo.ns.svc.cluster.local."] = true })
	if ok, err := p.Serves(ctx, "demo-1.demo.ns.svc"); !ok || err != nil {
		t.Errorf("Serves(name published since) = %v, %v; want true, nil", ok, err)
	}

	// Every question is of a private-use type, never A or AAAA, and no two in a row alike: a
	// cached negative answer of one probe can neither answer the next nor etcd's lookups.
	qs := dns.questions()
	if len(qs) != 3 {
		t.Fatalf("asked %d questions, want 3 (one per probe, the cluster domain's name only): %v", len(qs), qs)
	}
	for i, q := range qs {
		if q.Type < firstProbeType || q.Type > 0xFFFE {
			t.Errorf("question %d asked for type %v, want a private-use type", i, q.Type)
		}
		if i > 0 && q.Type == qs[i-1].Type {
			t.Errorf("questions %d and %d asked for the same type %v", i-1, i, q.Type)
		}
		if q.Class != dnsmessage.ClassINET {
			t.Errorf("question %d class %v, want IN", i, q.Class)
		}
	}
}

func TestServesErrors(t *testing.T) {
	ctx := context.Background()
	dns := newFakeDNS(t, "demo-0.demo.ns.svc.cluster.local.")
	p := &Prober{Servers: []string{dns.addr}, Search: []string{"svc.cluster.local"}, Timeout: 200 * time.Millisecond}

	servfail := dnsmessage.RCodeServerFailure
	dns.set(func(f *fakeDNS) { f.rcode = &servfail })
	if ok, err := p.Serves(ctx, "demo-0.demo.ns.svc"); ok || err == nil {
		t.Errorf("Serves with SERVFAIL = %v, %v; want false and an error", ok, err)
	}

	dns.set(func(f *fakeDNS) { f.rcode, f.silent = nil, true })
	start := time.Now()
	if ok, err := p.Serves(ctx, "demo-0.demo.ns.svc"); ok || err == nil {
		t.Errorf("Serves with a silent server = %v, %v; want false and an error", ok, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Serves with a silent server took %v, want about the 200ms timeout", d)
	}

	// A silent first server: the next one answers.
	dns.set(func(f *fakeDNS) { f.silent = false })
	dead := newFakeDNS(t)
	dead.set(func(f *fakeDNS) { f.silent = true })
	p.Servers = []string{dead.addr, dns.addr}
	if ok, err := p.Serves(ctx, "demo-0.demo.ns.svc"); !ok || err != nil {
		t.Errorf("Serves with a silent first server = %v, %v; want true, nil", ok, err)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		search []string
		host   string
		want   []string
	}{
		{[]string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local"}, "a-0.a.ns.svc", []string{"a-0.a.ns.svc.cluster.local."}},
		{[]string{"ns.svc.corp.example.", "svc.corp.example.", "corp.example."}, "a-0.a.ns.svc", []string{"a-0.a.ns.svc.corp.example."}},
		{[]string{"example.com"}, "a-0.a.ns.svc", []string{"a-0.a.ns.svc.example.com.", "a-0.a.ns.svc."}},
		{nil, "a-0.a.ns.svc", []string{"a-0.a.ns.svc."}},
		{[]string{"svc.cluster.local"}, "a-0.a.ns.svc.cluster.local.", []string{"a-0.a.ns.svc.cluster.local."}},
	} {
		p := &Prober{Search: tc.search}
		if got := p.Names(tc.host); !slices.Equal(got, tc.want) {
			t.Errorf("Names(%q) with search %v = %v, want %v", tc.host, tc.search, got, tc.want)
		}
	}
}

func TestNewFromResolvConf(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "resolv.conf")
	conf := "# a pod's\nsearch ns.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\nnameserver fd00::a\noptions ndots:5\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := NewFromResolvConf(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.96.0.10:53", "[fd00::a]:53"}; !slices.Equal(p.Servers, want) {
		t.Errorf("Servers = %v, want %v", p.Servers, want)
	}
	if want := []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local"}; !slices.Equal(p.Search, want) {
		t.Errorf("Search = %v, want %v", p.Search, want)
	}

	if err := os.WriteFile(path, []byte("search example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFromResolvConf(path); err == nil || !strings.Contains(err.Error(), "nameserver") {
		t.Errorf("NewFromResolvConf without a nameserver = %v, want ErrNoServer", err)
	}
	if _, err := NewFromResolvConf(filepath.Join(dir, "missing")); err == nil {
		t.Error("NewFromResolvConf of a missing file succeeded")
	}
}
