package etcdutil_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

func newMaintainer(t *testing.T, endpoints ...string) etcdutil.Maintainer {
	t.Helper()
	m, err := etcdutil.NewMaintainer(0, 0, endpoints, etcdutil.ConnConfig{})
	if err != nil {
		t.Fatalf("opening maintainer: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func rawClient(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	raw, err := clientv3.New(clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	return raw
}

// Compact compacts to the revision of the last write, which it returns; a revision before it
// is gone, and compacting again at the same revision is not an error.
func TestCompactToCurrentRevision(t *testing.T) {
	members := etcdtest.StartCluster(t, 1)
	raw := rawClient(t, members[0].ClientURL)
	ctx := context.Background()
	var last int64
	for i := range 5 {
		resp, err := raw.Put(ctx, "k", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		last = resp.Header.Revision
	}
	m := newMaintainer(t, members[0].ClientURL)
	for _, physical := range []bool{true, false} {
		rev, err := m.Compact(ctx, physical)
		if err != nil || rev != last {
			t.Fatalf("Compact(physical=%v) = %d, %v; want the last write's revision %d", physical, rev, err, last)
		}
	}
	if _, err := raw.Get(ctx, "k", clientv3.WithRev(last-1)); !errors.Is(rpctypes.Error(err), rpctypes.ErrCompacted) {
		t.Errorf("get at revision %d after the compaction: %v, want etcd's compacted error", last-1, err)
	}
	st, err := m.Status(ctx, members[0].ClientURL)
	if err != nil || st.Revision != last {
		t.Errorf("Status revision %d, %v; want %d", st.Revision, err, last)
	}
}

// Defragment gives a member's free pages back: after keys are deleted and compacted away its
// backend shrinks to what is in use, as Status reports it.
func TestDefragmentShrinksTheBackend(t *testing.T) {
	members := etcdtest.StartCluster(t, 1)
	ep := members[0].ClientURL
	raw := rawClient(t, ep)
	ctx := context.Background()
	value := strings.Repeat("x", 64<<10)
	for i := range 100 {
		if _, err := raw.Put(ctx, fmt.Sprintf("k%d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Delete(ctx, "k", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	m := newMaintainer(t, ep)
	if _, err := m.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	before, err := m.Status(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	// The file keeps its size until defragmented (bbolt reuses free pages, never gives them
	// back), whatever part of it is in use yet.
	if before.DBSize < 4<<20 || before.DBSizeInUse > before.DBSize {
		t.Fatalf("before defragmenting: %d bytes, %d in use; want the several MiB written", before.DBSize, before.DBSizeInUse)
	}
	if err := m.Defragment(ctx, ep); err != nil {
		t.Fatalf("Defragment: %v", err)
	}
	after, err := m.Status(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	if after.DBSize >= before.DBSize/2 {
		t.Errorf("after defragmenting: %d bytes, before %d; want the free pages given back", after.DBSize, before.DBSize)
	}
}

// AlarmDisarm clears a NOSPACE alarm; an alarm etcd does not raise is refused before it is
// sent (NONE of member 0 would clear every alarm).
func TestAlarmDisarm(t *testing.T) {
	members := etcdtest.StartClusterWith(t, 1, func(cfg *embed.Config) { cfg.QuotaBackendBytes = 1 << 16 })
	raw := rawClient(t, members[0].ClientURL)
	ctx := context.Background()
	value := strings.Repeat("x", 8<<10)
	var putErr error
	for i := 0; i < 1000 && putErr == nil; i++ {
		_, putErr = raw.Put(ctx, fmt.Sprintf("k%d", i), value)
	}
	m := newMaintainer(t, members[0].ClientURL)
	alarms, err := m.AlarmList(ctx)
	if err != nil || len(alarms) != 1 {
		t.Fatalf("alarms %v, %v; want NOSPACE (put: %v)", alarms, err, putErr)
	}
	for _, bad := range []etcdutil.Alarm{{MemberID: alarms[0].MemberID, Type: "NONE"}, {Type: etcdutil.AlarmNoSpace}, {MemberID: 1, Type: "FULL"}} {
		if err := m.AlarmDisarm(ctx, bad); err == nil {
			t.Errorf("AlarmDisarm(%+v): no error", bad)
		}
	}
	if alarms, err := m.AlarmList(ctx); err != nil || len(alarms) != 1 {
		t.Fatalf("alarms after refused disarms: %v, %v; want NOSPACE still", alarms, err)
	}
	if err := m.AlarmDisarm(ctx, alarms[0]); err != nil {
		t.Fatalf("AlarmDisarm: %v", err)
	}
	if alarms, err := m.AlarmList(ctx); err != nil || len(alarms) != 0 {
		t.Errorf("alarms after disarming: %v, %v; want none", alarms, err)
	}
}
