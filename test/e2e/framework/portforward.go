package framework

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Forward is a `kubectl port-forward` from a loopback port of the machine that runs the
// suite to a port of a pod in the test namespace, for what no pod of the suite can do: look
// at a member's TLS handshake from Go (ServedCertificate), or reach a port no Service
// exposes. kubectl ends a forward at the first connection the pod resets, as a TLS server
// refusing a handshake may: Addr starts it again.
type Forward struct {
	f    *Framework
	pod  string
	port int

	mu   sync.Mutex
	addr string
	// done is closed once the running kubectl has exited; stop ends it.
	done chan struct{}
	stop func()
}

// PortForward starts forwarding to port of pod until the test ends.
func (f *Framework) PortForward(pod string, port int) *Forward {
	f.t.Helper()
	fw := &Forward{f: f, pod: pod, port: port}
	if _, err := fw.Addr(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		fw.mu.Lock()
		defer fw.mu.Unlock()
		if fw.stop != nil {
			fw.stop()
		}
	})
	return fw
}

// Addr is the local address of a running forward, started anew if kubectl has exited.
func (fw *Forward) Addr() (string, error) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.done != nil {
		select {
		case <-fw.done:
			fw.stop()
		default:
			return fw.addr, nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, fw.f.kubectl, "-n", fw.f.Namespace, "port-forward", "--address=127.0.0.1",
		"pod/"+fw.pod, fmt.Sprintf(":%d", fw.port))
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return "", err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return "", fmt.Errorf("starting kubectl port-forward: %w", err)
	}
	// kubectl prints "Forwarding from 127.0.0.1:PORT -> port" once it listens, then a line
	// per connection, which must be read for it to go on.
	lines := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r)
		_ = cmd.Wait()
		close(done)
	}()
	stop := func() {
		cancel()
		<-done
	}
	var line string
	select {
	case line = <-lines:
	case <-time.After(time.Minute):
	}
	_, rest, found := strings.Cut(strings.TrimSpace(line), "Forwarding from ")
	addr, _, _ := strings.Cut(rest, " ")
	if !found || addr == "" {
		stop()
		return "", fmt.Errorf("kubectl port-forward to %s:%d did not start: %q", fw.pod, fw.port, line)
	}
	fw.addr, fw.done, fw.stop = addr, done, stop
	return addr, nil
}

// ServedCertificate is the certificate the TLS server forwarded to presents. The handshake
// trusts nothing and presents no certificate: it only shows what is served, for the caller to
// compare with the certificate it expects. A server that demands a client certificate ends
// the handshake after showing its own, which is enough.
func (fw *Forward) ServedCertificate() (*x509.Certificate, error) {
	addr, err := fw.Addr()
	if err != nil {
		return nil, err
	}
	var served *x509.Certificate
	cfg := &tls.Config{
		// What is served is compared with what should be: no trust is derived from this
		// handshake.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("no certificate served")
			}
			c, err := x509.ParseCertificate(raw[0])
			served = c
			return err
		},
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if conn != nil {
		conn.Close()
	}
	if served == nil {
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return served, nil
}
