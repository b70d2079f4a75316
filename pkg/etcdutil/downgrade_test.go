package etcdutil_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// The downgrade API against a real (embedded, 3.6) etcd: one minor down validates and is
// enabled, two minors down is refused, and a downgrade is cancelled cleanly
// (twice, as a restarted operator may). Status reports the downgrade and the storage version
// it lowers.
func TestDowngrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	members := etcdtest.StartCluster(t, 3)
	d, ok := newClient(t, etcdtest.ClientURLs(members...)...).(etcdutil.Downgrader)
	if !ok {
		t.Fatal("the client does not drive the downgrade API")
	}
	// etcd 3.6 answers a downgrade request with the cluster version, and panics on one that
	// comes before its leader has decided that version: wait until every member knows it.
	for _, m := range members {
		for deadline := time.Now().Add(etcdtest.ReadyTimeout); m.Etcd.Server.ClusterVersion() == nil; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("member %s: no cluster version within %v", m.Name, etcdtest.ReadyTimeout)
			}
		}
	}
	if err := d.DowngradeCancel(ctx); err != nil {
		t.Errorf("cancel without a downgrade: %v, want done", err)
	}
	if err := d.DowngradeValidate(ctx, "3.4.0"); !errors.Is(err, etcdutil.ErrDowngradeInvalid) {
		t.Errorf("validate two minors down: %v, want ErrDowngradeInvalid", err)
	}
	if err := d.DowngradeValidate(ctx, "3.5.0"); err != nil {
		t.Fatalf("validate one minor down: %v", err)
	}
	endpoint := etcdtest.ClientURLs(members[0])[0]
	cli := d.(etcdutil.Client)
	if st, err := cli.Status(ctx, endpoint); err != nil || st.DowngradeTarget != "" || st.StorageVersion != "3.6.0" {
		t.Fatalf("status before: %+v, %v; want no downgrade target, storage version 3.6.0", st, err)
	}
	if err := d.DowngradeEnable(ctx, "3.5.0"); err != nil {
		t.Fatalf("enable: %v", err)
	}
	// Every member reports the downgrade once it has applied it, and etcd lowers the storage
	// version on its own (within its monitor's period of a few seconds).
	for _, m := range members {
		waitStatus(t, cli, etcdtest.ClientURLs(m)[0], func(st etcdutil.Status) bool {
			return st.DowngradeTarget == "3.5.0" && st.StorageVersion == "3.5.0"
		})
	}
	// Enabled again (an operator that restarted): once etcd has lowered the cluster version,
	// the target is no longer one minor below it, and etcd calls it invalid.
	if err := d.DowngradeEnable(ctx, "3.5.0"); !errors.Is(err, etcdutil.ErrDowngradeInProgress) && !errors.Is(err, etcdutil.ErrDowngradeInvalid) {
		t.Errorf("enable twice: %v, want ErrDowngradeInProgress or ErrDowngradeInvalid", err)
	}
	if err := d.DowngradeCancel(ctx); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	waitStatus(t, cli, endpoint, func(st etcdutil.Status) bool { return st.DowngradeTarget == "" })
	if err := d.DowngradeCancel(ctx); err != nil {
		t.Errorf("cancel after cancel: %v, want done", err)
	}
}

// waitStatus polls the member at endpoint until its status satisfies ok, for up to 30 s.
func waitStatus(t *testing.T, cli etcdutil.Client, endpoint string, ok func(etcdutil.Status) bool) {
	t.Helper()
	var st etcdutil.Status
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if st, err = cli.Status(context.Background(), endpoint); err == nil && ok(st) {
			return
		}
	}
	t.Fatalf("status of %s: %+v, %v: not as expected within 30 s", endpoint, st, err)
}
