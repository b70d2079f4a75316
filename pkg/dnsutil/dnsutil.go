// Package dnsutil asks cluster DNS whether it already serves a member's name, without ever
// making it cache a negative answer for the lookups etcd makes.
//
// Why: the operator learns that a pod's record is published from its informer on the headless
// Service's EndpointSlices; the cluster DNS server (CoreDNS) watches the same objects and may
// see them a little later. A member that looks up a peer's name in between gets "no such
// host", and CoreDNS keeps that answer for its negative-cache TTL (30 s by default): one
// unlucky lookup costs a membership step 30 s. So before telling any member about a name, the
// operator asks DNS itself.
//
// How the question cannot poison the cache: DNS caches key answers by name and query type.
// etcd's resolver asks for A and AAAA. The probe asks for a type from the private-use range
// (RFC 6895), a different one each time. CoreDNS's kubernetes plugin answers any such type
// with NOERROR and no records (NODATA) when the name exists, and NXDOMAIN when it does not; a
// negative answer is cached only for that private type, which nobody else ever asks for.
package dnsutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Checker tells whether cluster DNS serves a host name yet.
type Checker interface {
	// Serves reports whether DNS answers that host exists. (false, nil): the server says it
	// does not exist yet. An error: no server gave an answer either way.
	Serves(ctx context.Context, host string) (bool, error)
}

// Query types the probes use: the private-use range 0xFF00-0xFFFE, one after the other, so
// that a negative answer cached for one probe never answers the next (CoreDNS caches it
// for at most its negative TTL; wrapping around takes 255 probes of the same name).
const (
	firstProbeType = 0xFF00
	probeTypes     = 0xFFFE - 0xFF00 + 1
)

// ResolvConf is the resolver configuration of a process; in a pod it names cluster DNS.
const ResolvConf = "/etc/resolv.conf"

// DefaultTimeout bounds one question to one server.
const DefaultTimeout = time.Second

// TrustAfter is how long a name that cluster DNS does not confirm is waited for before it is
// used anyway (a name server that does not answer the probes, or answers them differently
// from A lookups): by then a negative answer cached before the record existed has expired at
// CoreDNS's default 30 s TTL. It bounds what the check can cost; it is not how the check
// normally ends. The operator and member-init both wait at most this long.
const TrustAfter = 30 * time.Second

// Prober asks the name servers of a resolv.conf, over UDP.
type Prober struct {
	// Servers are host:port addresses, asked in order until one answers.
	Servers []string
	// Search is the resolv.conf search list, tried like a resolver with a high ndots does.
	Search []string
	// Timeout bounds one question to one server.
	Timeout time.Duration

	next atomic.Uint32
}

var _ Checker = (*Prober)(nil)

// ErrNoServer is returned by NewFromResolvConf when the file names no name server.
var ErrNoServer = errors.New("no nameserver")

// NewFromResolvConf reads the name servers and search list of a resolv.conf (normally
// /etc/resolv.conf, which in a pod points at cluster DNS).
func NewFromResolvConf(path string) (*Prober, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	p := &Prober{Timeout: DefaultTimeout}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if ip := net.ParseIP(fields[1]); ip != nil {
				p.Servers = append(p.Servers, net.JoinHostPort(ip.String(), "53"))
			}
		case "search":
			p.Search = fields[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(p.Servers) == 0 {
		return nil, fmt.Errorf("reading %s: %w", path, ErrNoServer)
	}
	return p, nil
}

// Names are the fully qualified names a resolver would try for host, most likely first. In a
// pod the search list holds "svc.<cluster domain>", and a member's name
// <pod>.<service>.<namespace>.svc resolves as <pod>.<service>.<namespace>.svc.<cluster domain>:
// then only that name is asked. Otherwise every search expansion and the bare name are.
func (p *Prober) Names(host string) []string {
	if strings.HasSuffix(host, ".") {
		return []string{host}
	}
	for _, s := range p.Search {
		if domain, ok := strings.CutPrefix(strings.TrimSuffix(s, "."), "svc."); ok && strings.HasSuffix(host, ".svc") {
			return []string{host + "." + domain + "."}
		}
	}
	out := make([]string, 0, len(p.Search)+1)
	for _, s := range p.Search {
		out = append(out, host+"."+strings.TrimSuffix(s, ".")+".")
	}
	return append(out, host+".")
}

// Serves asks for each of Names(host) in turn: true at the first that exists, false when the
// server says none does.
func (p *Prober) Serves(ctx context.Context, host string) (bool, error) {
	for _, name := range p.Names(host) {
		ok, err := p.exists(ctx, name)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// exists asks the servers in turn about one fully qualified name.
func (p *Prober) exists(ctx context.Context, fqdn string) (bool, error) {
	qname, err := dnsmessage.NewName(fqdn)
	if err != nil {
		return false, fmt.Errorf("asking DNS for %s: %w", fqdn, err)
	}
	var errs []error
	for _, server := range p.Servers {
		qtype := dnsmessage.Type(firstProbeType + p.next.Add(1)%probeTypes)
		ok, err := p.ask(ctx, server, qname, qtype)
		if err == nil {
			return ok, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return false, fmt.Errorf("asking DNS for %s: %w", fqdn, errors.Join(errs...))
}

// ask sends one question to one server and reads its answer: NOERROR means the name exists
// (with no records of the asked type), NXDOMAIN that it does not; any other code is an error.
func (p *Prober) ask(ctx context.Context, server string, qname dnsmessage.Name, qtype dnsmessage.Type) (bool, error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", server)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}

	id := uint16(rand.Uint32())
	q := dnsmessage.Question{Name: qname, Type: qtype, Class: dnsmessage.ClassINET}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), dnsmessage.Header{ID: id, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		return false, err
	}
	if err := b.Question(q); err != nil {
		return false, err
	}
	msg, err := b.Finish()
	if err != nil {
		return false, err
	}
	if _, err := conn.Write(msg); err != nil {
		return false, fmt.Errorf("asking %s: %w", server, err)
	}

	buf := make([]byte, 1232)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return false, fmt.Errorf("reading the answer of %s: %w", server, err)
		}
		var parser dnsmessage.Parser
		h, err := parser.Start(buf[:n])
		if err != nil || h.ID != id || !h.Response {
			continue // not the answer to this question: keep reading until the deadline
		}
		got, err := parser.Question()
		if err != nil || got.Type != q.Type || !strings.EqualFold(got.Name.String(), q.Name.String()) {
			continue
		}
		switch h.RCode {
		case dnsmessage.RCodeSuccess:
			return true, nil
		case dnsmessage.RCodeNameError:
			return false, nil
		default:
			return false, fmt.Errorf("%s answered %v", server, h.RCode)
		}
	}
}
