package etcdutil_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// countingProxy forwards TCP connections to one address and counts them. Set down, it closes
// the connections it forwards and, until set up again, every connection as soon as it accepts
// it, as a member whose etcd stopped.
type countingProxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	accepted int
	conns    map[net.Conn]bool
	down     bool
}

func newCountingProxy(t *testing.T, targetURL string) *countingProxy {
	t.Helper()
	u, err := url.Parse(targetURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { _ = ln.Close() })
	go p.serve()
	return p
}

func (p *countingProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *countingProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepted++
		down := p.down
		if !down {
			p.conns[c] = true
		}
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		go p.forward(c)
	}
}

// forward pipes c to the target until either side closes.
func (p *countingProxy) forward(c net.Conn) {
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	defer c.Close()
	b, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	<-done
}

func (p *countingProxy) counts() (accepted, open int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted, len(p.conns)
}

func (p *countingProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

// A client kept from one pass to the next dials nothing again: every Status of a member goes
// over one connection of its own, every call to the cluster over the balanced one, and Close
// closes both. A connection that failed is dialed anew, so a member that is back answers the
// first Status after it, however often it failed before.
func TestClientKeepsItsConnections(t *testing.T) {
	t.Parallel()
	m := etcdtest.StartCluster(t, 1)[0]
	p := newCountingProxy(t, m.ClientURL)
	cli, err := etcdutil.NewFactory(0, 0).New([]string{p.url()}, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 5 {
		if _, err := cli.Status(ctx, p.url()); err != nil {
			t.Fatalf("Status: %v", err)
		}
		if _, err := cli.MemberList(ctx); err != nil {
			t.Fatalf("MemberList: %v", err)
		}
		if _, err := cli.AlarmList(ctx); err != nil {
			t.Fatalf("AlarmList: %v", err)
		}
	}
	if accepted, _ := p.counts(); accepted != 2 {
		t.Errorf("five rounds of Status, MemberList and AlarmList made %d connections, want 2 (Status's and the balanced one)", accepted)
	}

	p.setDown(true)
	for range 5 {
		if _, err := cli.Status(ctx, p.url()); err == nil {
			t.Fatal("Status through a proxy that drops every connection succeeded")
		}
	}
	p.setDown(false)
	// A reconnect attempt already on its way when the member came back may have been accepted
	// while the proxy was down and closed by it; the Status that waits on that attempt fails
	// with it. The one after must go over a connection dialed anew at once: with gRPC's default
	// backoff the connection would still be waiting out its failures.
	if _, err := cli.Status(ctx, p.url()); err != nil {
		t.Logf("the first Status once the member serves again (an attempt made while down): %v", err)
		if _, err := cli.Status(ctx, p.url()); err != nil {
			t.Errorf("the second Status once the member serves again: %v", err)
		}
	}

	if err := cli.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	poll(t, "every connection closed", func() error {
		if _, open := p.counts(); open != 0 {
			return fmt.Errorf("%d connections still open", open)
		}
		return nil
	})
	if _, err := cli.Status(ctx, p.url()); err == nil {
		t.Error("Status after Close succeeded")
	}
	if _, err := cli.MemberList(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("MemberList after Close = %v, want a closed client's error at once", err)
	}
}
