package memberinit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

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

func TestParse(t *testing.T) {
	o, err := Parse([]string{"--data-dir=/d", "--peer-url=http://a:2380", "--endpoints=http://b:2379, http://c:2379"})
	if err != nil {
		t.Fatal(err)
	}
	if o.ClusterState != "existing" || len(o.Endpoints) != 2 || o.Endpoints[1] != "http://c:2379" {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range [][]string{
		{"--peer-url=http://a:2380", "--endpoints=http://b:2379"},
		{"--data-dir=/d", "--peer-url=http://a:2380"},
		{"--data-dir=/d", "--peer-url=http://a:2380", "--initial-cluster-state=maybe"},
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%v) accepted", bad)
		}
	}
}

func TestRunReturnsAtOnce(t *testing.T) {
	withData := t.TempDir()
	if err := os.MkdirAll(filepath.Join(withData, "member", "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"seed": {DataDir: t.TempDir(), PeerURL: "http://a:2380", ClusterState: "new", PollInterval: time.Millisecond},
		// Nobody answers at this endpoint: a member with data must start without asking.
		"restart with data": {DataDir: withData, PeerURL: "http://a:2380", ClusterState: "existing",
			Endpoints: []string{"http://127.0.0.1:1"}, PollInterval: time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var out bytes.Buffer
			if err := Run(ctx, o, etcdutil.NewFactory(0, 0), &out); err != nil {
				t.Fatalf("Run: %v (%s)", err, out.String())
			}
		})
	}
}

func TestRunWaitsUntilAdded(t *testing.T) {
	seed := etcdtest.StartSeed(t)
	joiner := etcdtest.Ports(t, "m1")
	o := Options{DataDir: t.TempDir(), PeerURL: joiner.PeerURL, ClusterState: "existing",
		Endpoints: []string{seed.ClientURL}, PollInterval: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, etcdutil.NewFactory(0, 0), out) }()

	// Run must still be waiting once it has asked at least once.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "waiting for") {
		if time.Now().After(deadline) {
			t.Fatalf("Run never started waiting: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v before the member was added", err)
	case <-time.After(200 * time.Millisecond):
	}

	cli, err := etcdutil.NewFactory(0, 0).New([]string{seed.ClientURL})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	added := time.Now()
	if _, err := cli.MemberAddAsLearner(ctx, joiner.PeerURL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if d := time.Since(added); d > 2*time.Second {
			t.Errorf("Run noticed the add after %s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Run still waiting 10s after the member was added: %q", out.String())
	}
}

func TestRunHonoursCancel(t *testing.T) {
	seed := etcdtest.StartSeed(t)
	o := Options{DataDir: t.TempDir(), PeerURL: "http://never:2380", ClusterState: "existing",
		Endpoints: []string{seed.ClientURL}, PollInterval: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, etcdutil.NewFactory(0, 0), &syncBuffer{}) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run ignored cancellation")
	}
}
