package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// put writes n keys k<from>..k<from+n-1> and returns the revision after the last.
func put(t *testing.T, url string, from, n int) int64 {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var rev int64
	for i := from; i < from+n; i++ {
		resp, err := cli.Put(context.Background(), fmt.Sprintf("k%d", i), "v")
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	return rev
}

func endpointsOf(members []*etcdtest.Member) []Endpoint {
	var out []Endpoint
	for _, m := range members {
		out = append(out, Endpoint{Name: m.Name, URL: m.ClientURL})
	}
	return out
}

// A snapshot taken from a three-member cluster is written under the path, named by its
// revision, verified, and reported with what is in the file; it comes from a follower.
func TestTakeWritesAVerifiedSnapshot(t *testing.T) {
	members := etcdtest.StartCluster(t, 3)
	rev := put(t, members[0].ClientURL, 0, 20)
	root := t.TempDir()
	res, err := Take(context.Background(), Options{Members: endpointsOf(members), Root: root, Path: "ex/", Name: "c-b"},
		etcdutil.NewFactory(0, 0), quietLog())
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if want := fmt.Sprintf("ex/c-b-%d.db", rev); res.Location != want || res.Revision != rev {
		t.Errorf("location %q revision %d, want %q and %d", res.Location, res.Revision, want, rev)
	}
	checked, err := Verify(filepath.Join(root, res.Location))
	if err != nil {
		t.Fatalf("Verify of the file written: %v", err)
	}
	if checked.SizeBytes != res.SizeBytes || checked.SHA256 != res.SHA256 || res.EtcdVersion == "" {
		t.Errorf("reported %+v, the file is %+v", res, checked)
	}
	for _, m := range members {
		if m.Name == res.Member && m.Etcd.Server.Leader() == m.Etcd.Server.MemberID() {
			t.Errorf("the snapshot came from the leader %s; a follower answered", m.Name)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "ex", PartFile("c-b"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary file is left: %v", err)
	}
}

// A snapshot of a cluster that never held a key reports the revision etcd starts its store
// at, 1, as its header does, not 0.
func TestTakeOfAnEmptyClusterReportsRevisionOne(t *testing.T) {
	members := etcdtest.StartCluster(t, 1)
	res, err := Take(context.Background(), Options{Members: endpointsOf(members), Root: t.TempDir(), Name: "c-b"},
		etcdutil.NewFactory(0, 0), quietLog())
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if res.Revision != 1 || res.Location != "c-b-1.db" {
		t.Errorf("revision %d at %q, want 1 at c-b-1.db", res.Revision, res.Location)
	}
}

// A truncated or corrupted file is refused, as is a missing one.
func TestVerifyRefusesTruncatedAndCorruptFiles(t *testing.T) {
	members := etcdtest.StartCluster(t, 1)
	put(t, members[0].ClientURL, 0, 5)
	root := t.TempDir()
	res, err := Take(context.Background(), Options{Members: endpointsOf(members), Root: root, Name: "c-b"},
		etcdutil.NewFactory(0, 0), quietLog())
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	good, err := os.ReadFile(filepath.Join(root, res.Location))
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)/2] ^= 0xff
	for name, data := range map[string][]byte{
		"truncated":         good[:len(good)-4096],
		"hash cut off":      good[:len(good)-32],
		"a flipped byte":    corrupt,
		"empty":             nil,
		"a page and a hash": append(good[:4096:4096], good[len(good)-32:]...),
	} {
		path := filepath.Join(t.TempDir(), "s.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(path); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Verify = %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := Verify(filepath.Join(root, "missing.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: Verify = %v, want ErrNotExist", err)
	}
}

// Without quorum no snapshot is taken: a member that has lost its peers still answers
// Status, but no linearizable read.
func TestTakeRefusesWithoutQuorum(t *testing.T) {
	members := etcdtest.StartCluster(t, 3)
	members[1].Stop()
	members[2].Stop()
	root := t.TempDir()
	_, err := Take(context.Background(), Options{Members: endpointsOf(members), Root: root, Name: "c-b"},
		etcdutil.NewFactory(0, 0), quietLog())
	var f *Failure
	if !errors.As(err, &f) || f.Reason != FailureNoQuorum {
		t.Fatalf("Take without quorum = %v, want a NoQuorum failure", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("files written without quorum: %v", entries)
	}
}

// A report survives the termination message's round trip, and a long message is cut.
func TestReportRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "msg")
	long := make([]byte, 10000)
	for i := range long {
		long[i] = 'x'
	}
	for _, r := range []Report{
		{Result: &Result{Revision: 7, SizeBytes: 4128, SHA256: "ab", Member: "c-1", Location: "p/c-b-7.db"}},
		{Reason: FailureNoSpace, Message: string(long)},
	} {
		if err := r.Write(path); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		got, ok := ReadReport(string(b))
		if !ok || len(b) > maxReport || got.Reason != r.Reason || (r.Result != nil && *got.Result != *r.Result) {
			t.Errorf("round trip of %.80v: got %.80v ok %v (%d bytes)", r, got, ok, len(b))
		}
	}
	if _, ok := ReadReport("panic: something"); ok {
		t.Error("a message that is no report read as one")
	}
}

// A cluster whose client port demands certificates is backed up with the files of the
// cluster's client Secret: the members verified by its CA, the snapshot taken and checked as
// over plaintext. Without the files, no member answers.
func TestTakeOverTLS(t *testing.T) {
	t.Parallel()
	servers, clients := etcdtest.NewCA(t, "servers"), etcdtest.NewCA(t, "clients")
	members := etcdtest.StartClusterWith(t, 3, etcdtest.ServeClientTLS(t, servers, clients))
	eps := endpointsOf(members)
	for i := range eps {
		eps[i].URL = etcdtest.HTTPS(eps[i].URL)
	}
	cert, key := clients.IssueClient(t, "demo-client")
	o := Options{Members: eps, Root: t.TempDir(), Path: "ex", Name: "c-b",
		TLS: etcdutil.TLSFiles{CertFile: cert, KeyFile: key, CAFile: servers.CertFile}}
	res, err := Take(context.Background(), o, etcdutil.NewFactory(0, 0), quietLog())
	if err != nil {
		t.Fatalf("Take over TLS: %v", err)
	}
	if _, err := Verify(filepath.Join(o.Root, res.Location)); err != nil || res.Revision < 1 {
		t.Errorf("snapshot %+v: %v", res, err)
	}

	plain := o
	plain.TLS = etcdutil.TLSFiles{}
	var f *Failure
	if _, err := Take(context.Background(), plain, etcdutil.NewFactory(0, 0), quietLog()); !errors.As(err, &f) || f.Reason != FailureNoQuorum {
		t.Errorf("Take without the client certificate = %v, want a NoQuorum failure", err)
	}
	missing := o
	missing.TLS.KeyFile += ".gone"
	if _, err := Take(context.Background(), missing, etcdutil.NewFactory(0, 0), quietLog()); !errors.As(err, &f) || f.Reason != FailureError {
		t.Errorf("Take with a missing key file = %v, want an Error failure", err)
	}
}

// The backup pod's command line carries the client certificate's files; Parse reads back
// what Render writes, and refuses a certificate without its key or CA.
func TestArgsTLS(t *testing.T) {
	a := Args{Options: Options{Members: []Endpoint{{Name: "demo-0", URL: "https://demo-0.ns.svc:2379"}}, Root: "/backup", Path: "p", Name: "demo-b",
		TLS: etcdutil.TLSFiles{CertFile: "/etc/etcd-client-tls/tls.crt", KeyFile: "/etc/etcd-client-tls/tls.key", CAFile: "/etc/etcd-client-tls/ca.crt"}},
		TerminationLog: DefaultTerminationLog}
	got, err := Parse(a.Render())
	if err != nil {
		t.Fatalf("Parse(%q): %v", a.Render(), err)
	}
	if got.TLS != a.TLS || len(got.Members) != 1 || got.Members[0] != a.Members[0] {
		t.Errorf("Parse(Render()) = %+v, want %+v", got, a)
	}
	plain := a
	plain.TLS = etcdutil.TLSFiles{}
	if r := plain.Render(); slices.ContainsFunc(r, func(s string) bool { return strings.HasSuffix(strings.SplitN(s, "=", 2)[0], "-file") }) {
		t.Errorf("Render without TLS = %q, want no file flags", r)
	}
	if _, err := Parse(append(plain.Render(), "--cert-file=/c", "--ca-file=/ca")); err == nil {
		t.Error("Parse accepted a certificate without its key")
	}
}
