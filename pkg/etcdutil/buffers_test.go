package etcdutil

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// maxFrame is the largest HTTP/2 frame payload a member may send a client that does not ask
// for larger ones (SETTINGS_MAX_FRAME_SIZE's initial value), which gRPC's client does not.
const maxFrame = 16384

// readRecorder dials as gRPC does and records how many bytes each read on the connections it
// made asked for: gRPC reading through a buffer of its own asks for a buffer's worth at a time,
// gRPC reading without one asks for a frame's header, then for its payload.
type readRecorder struct {
	mu    sync.Mutex
	conns int
	reads []int
}

func (r *readRecorder) dial(ctx context.Context, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.conns++
	r.mu.Unlock()
	return &recordedConn{Conn: c, r: r}, nil
}

func (r *readRecorder) seen() (conns int, reads []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns, slices.Clone(r.reads)
}

type recordedConn struct {
	net.Conn
	r *readRecorder
}

func (c *recordedConn) Read(p []byte) (int, error) {
	c.r.mu.Lock()
	c.r.reads = append(c.r.reads, len(p))
	c.r.mu.Unlock()
	return c.Conn.Read(p)
}

// The connections a client keeps, balanced (open) and to one member (dialMember), carry small
// requests for as long as the operator runs and read without a buffer of their own: no read
// asks for more than a frame.
func TestKeptConnectionsReadWithoutABuffer(t *testing.T) {
	m := etcdtest.StartCluster(t, 1)[0]
	calls := map[string]func(context.Context, Client) error{
		"balanced": func(ctx context.Context, cli Client) error {
			_, err := cli.MemberList(ctx)
			return err
		},
		"one member": func(ctx context.Context, cli Client) error {
			_, err := cli.Status(ctx, m.ClientURL)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			rec := &readRecorder{}
			f := newFactory(0, 0)
			f.dial = rec.dial
			cli, err := f.New([]string{m.ClientURL}, ConnConfig{})
			if err != nil {
				t.Fatalf("opening client: %v", err)
			}
			defer cli.Close()
			if err := call(context.Background(), cli); err != nil {
				t.Fatalf("calling: %v", err)
			}
			conns, reads := rec.seen()
			if conns != 1 || len(reads) == 0 {
				t.Fatalf("%d connections and %d reads through the factory's dialer, want one connection that was read", conns, len(reads))
			}
			if biggest := slices.Max(reads); biggest > maxFrame {
				t.Errorf("a read asked for %d bytes, more than a frame (%d): gRPC reads through a buffer (reads asked for: %v)", biggest, maxFrame, reads)
			}
		})
	}
}
