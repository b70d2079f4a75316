package etcdutil_test

import (
	"context"
	"errors"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// The downgrade API against a real (embedded, 3.6) etcd: one minor down validates and is
// enabled, two minors down is refused, and a downgrade is cancelled cleanly
// (twice, as a restarted operator may).
func TestDowngrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	members := etcdtest.StartCluster(t, 3)
	d, ok := newClient(t, etcdtest.ClientURLs(members...)...).(etcdutil.Downgrader)
	if !ok {
		t.Fatal("the client does not drive the downgrade API")
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
	if err := d.DowngradeEnable(ctx, "3.5.0"); err != nil {
		t.Fatalf("enable: %v", err)
	}
	if err := d.DowngradeEnable(ctx, "3.5.0"); !errors.Is(err, etcdutil.ErrDowngradeInProgress) {
		t.Errorf("enable twice: %v, want ErrDowngradeInProgress", err)
	}
	if err := d.DowngradeCancel(ctx); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if err := d.DowngradeCancel(ctx); err != nil {
		t.Errorf("cancel after cancel: %v, want done", err)
	}
}
