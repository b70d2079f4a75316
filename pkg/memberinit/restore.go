package memberinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// DefaultEtcdutl is etcdutl in the etcd image.
const DefaultEtcdutl = "/usr/local/bin/etcdutl"

// RestoreFailedPrefix begins the termination message of a member-init that refused to
// restore the seed from its snapshot; etcd was not started.
const RestoreFailedPrefix = "restore-failed: "

// ErrRestoreFailed is wrapped by Run's error when the seed could not be restored from its
// snapshot: etcd is not started, so no empty cluster is ever bootstrapped in its place.
var ErrRestoreFailed = errors.New("restore from snapshot failed")

// Restore says how the seed of a new cluster is restored before its first start.
type Restore struct {
	// From is the snapshot file (on a read-only mount).
	From string
	// BumpRevision and MarkCompacted are etcdutl snapshot restore's options of those names.
	BumpRevision  int64
	MarkCompacted bool
	// Etcdutl is the etcdutl binary of the member's etcd version; DefaultEtcdutl when empty.
	Etcdutl string
}

// restore makes the data dir from the snapshot: it checks the file (etcd's own hash), runs
// etcdutl snapshot restore with the member's name, peer URL, initial cluster and cluster token
// (read from etcd's own command line, so they cannot differ) into a folder beside the data dir,
// and renames that folder into place: a restore cut short leaves no data dir, and is done again.
func restore(ctx context.Context, o Options, out io.Writer) error {
	r := o.Restore
	checked, err := snapshot.Verify(r.From)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRestoreFailed, err)
	}
	tmp := filepath.Clean(o.DataDir) + ".restoring"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("%w: removing an earlier restore's %s: %v", ErrRestoreFailed, tmp, err)
	}
	args := []string{"snapshot", "restore", r.From, "--data-dir=" + tmp}
	for _, flag := range []string{"name", "initial-cluster", "initial-cluster-token", "initial-advertise-peer-urls"} {
		v, ok := flagValue(o.Exec, flag)
		if !ok {
			return fmt.Errorf("%w: etcd's command line has no --%s", ErrRestoreFailed, flag)
		}
		args = append(args, "--"+flag+"="+v)
	}
	if r.BumpRevision > 0 {
		args = append(args, "--bump-revision="+strconv.FormatInt(r.BumpRevision, 10))
	}
	if r.MarkCompacted {
		args = append(args, "--mark-compacted")
	}
	etcdutl := r.Etcdutl
	if etcdutl == "" {
		etcdutl = DefaultEtcdutl
	}
	cmd := exec.CommandContext(ctx, etcdutl, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: etcdutl snapshot restore of %s (%d bytes): %v", ErrRestoreFailed, r.From, checked.SizeBytes, err)
	}
	if err := os.Rename(tmp, o.DataDir); err != nil {
		return fmt.Errorf("%w: moving the restored data into %s: %v", ErrRestoreFailed, o.DataDir, err)
	}
	if d, err := os.Open(filepath.Dir(o.DataDir)); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("%w: syncing %s: %v", ErrRestoreFailed, filepath.Dir(o.DataDir), err)
		}
	}
	return nil
}

// flagValue is the value of --name=value in argv.
func flagValue(argv []string, name string) (string, bool) {
	for _, a := range argv {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}
