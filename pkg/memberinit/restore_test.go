package memberinit

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// seedOptions are the options of a new cluster's seed restored from the file from, with a
// stand-in etcdutl that records its arguments and makes a data dir as etcdutl does.
func seedOptions(t *testing.T, from string) (Options, string) {
	dir := t.TempDir()
	etcdutl := filepath.Join(dir, "etcdutl")
	args := filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" > " + args + "\nfor a in \"$@\"; do case $a in --data-dir=*) mkdir -p \"${a#--data-dir=}/member/snap\";; esac; done\n"
	if err := os.WriteFile(etcdutl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return Options{
		DataDir: filepath.Join(dir, "data"), PeerURL: "http://c-0.c.ns.svc:2380", ClusterState: etcdutil.ClusterStateNew,
		PollInterval: DefaultPollInterval,
		Restore:      Restore{From: from, BumpRevision: 1000, MarkCompacted: true, Etcdutl: etcdutl},
		Exec: []string{"/usr/local/bin/etcd", "--name=c-0", "--initial-cluster=c-0=http://c-0.c.ns.svc:2380",
			"--initial-cluster-token=c-uid", "--initial-advertise-peer-urls=http://c-0.c.ns.svc:2380"},
	}, args
}

// A seed whose snapshot is missing, truncated or corrupt is not started: no data dir is made,
// and the error says why (ErrRestoreFailed, which the termination message names).
func TestRestoreRefusesABadSnapshot(t *testing.T) {
	dir := t.TempDir()
	truncated := filepath.Join(dir, "truncated.db")
	if err := os.WriteFile(truncated, make([]byte, 4096+10), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, from := range map[string]string{"missing": filepath.Join(dir, "missing.db"), "truncated": truncated} {
		o, args := seedOptions(t, from)
		err := Run(context.Background(), o, nil, io.Discard)
		if !errors.Is(err, ErrRestoreFailed) {
			t.Errorf("%s: Run = %v, want ErrRestoreFailed", name, err)
		}
		if _, err := os.Stat(o.DataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a data dir was made: %v", name, err)
		}
		if _, err := os.Stat(args); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: etcdutl ran on a bad snapshot", name)
		}
		term := filepath.Join(t.TempDir(), "term")
		if err := WriteTermination(term, err); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(term); !strings.HasPrefix(string(b), RestoreFailedPrefix) {
			t.Errorf("%s: termination message %q", name, b)
		}
	}
}

// A good snapshot is restored with etcd's own name, URLs and token and the revision options,
// into the data dir; a seed whose data dir holds data is not restored again.
func TestRestoreMakesTheDataDir(t *testing.T) {
	o, args := seedOptions(t, goodSnapshot(t))
	if err := Run(context.Background(), o, nil, io.Discard); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if has, _ := hasData(o.DataDir); !has {
		t.Fatal("no data dir after the restore")
	}
	b, _ := os.ReadFile(args)
	for _, want := range []string{"snapshot restore " + o.Restore.From, "--name=c-0", "--initial-cluster=c-0=http://c-0.c.ns.svc:2380",
		"--initial-cluster-token=c-uid", "--initial-advertise-peer-urls=http://c-0.c.ns.svc:2380", "--bump-revision=1000", "--mark-compacted",
		"--data-dir=" + o.DataDir + ".restoring"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("etcdutl ran with %q, missing %q", b, want)
		}
	}
	os.Remove(args)
	if err := Run(context.Background(), o, nil, io.Discard); err != nil {
		t.Fatalf("Run on the restored data dir: %v", err)
	}
	if _, err := os.Stat(args); !errors.Is(err, os.ErrNotExist) {
		t.Error("a seed with data was restored again")
	}
}

// The revision options go together, as etcdutl takes them, and a restore is only for the seed
// of a new cluster.
func TestRestoreOptionsValidated(t *testing.T) {
	o, _ := seedOptions(t, "/s.db")
	for name, change := range map[string]func(*Options){
		"bump alone":    func(o *Options) { o.Restore.MarkCompacted = false },
		"compact alone": func(o *Options) { o.Restore.BumpRevision = 0 },
		"joining":       func(o *Options) { o.ClusterState = etcdutil.ClusterStateExisting },
	} {
		bad := o
		change(&bad)
		if err := bad.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := o.Validate(); err != nil {
		t.Errorf("both revision options: %v", err)
	}
}
