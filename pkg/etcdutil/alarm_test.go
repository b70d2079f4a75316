package etcdutil_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// A member whose backend reaches its quota raises NOSPACE; AlarmList reports it with the
// member's ID, and nothing while no alarm is raised.
func TestAlarmListNoSpace(t *testing.T) {
	members := etcdtest.StartClusterWith(t, 1, func(cfg *embed.Config) { cfg.QuotaBackendBytes = 1 << 16 })
	cli := newClient(t, etcdtest.ClientURLs(members...)...)
	ctx := context.Background()
	if alarms, err := cli.AlarmList(ctx); err != nil || len(alarms) != 0 {
		t.Fatalf("AlarmList before any write = %v, %v; want none", alarms, err)
	}

	raw, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.ClientURLs(members...), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	value := strings.Repeat("x", 8<<10)
	var putErr error
	for i := 0; i < 1000 && putErr == nil; i++ {
		_, putErr = raw.Put(ctx, fmt.Sprintf("k%d", i), value)
	}
	if putErr == nil || !strings.Contains(putErr.Error(), "database space exceeded") {
		t.Fatalf("writes past a 64KiB quota: %v, want etcd's no-space error", putErr)
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		t.Fatalf("AlarmList: %v", err)
	}
	if len(alarms) != 1 || alarms[0].Type != etcdutil.AlarmNoSpace || alarms[0].MemberID != members[0].ID() {
		t.Errorf("alarms %+v, want NOSPACE on member %x", alarms, members[0].ID())
	}
}
