package memberinit

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// tlsFiles are the files of a member pod of a cluster with client TLS (member.TLSDir).
var tlsFiles = etcdutil.TLSFiles{CertFile: "/etc/etcd/tls/client.crt", KeyFile: "/etc/etcd/tls/client.key", CAFile: "/etc/etcd/tls/server-ca.crt"}

// With client TLS, the pod's command line carries the files member-init dials with, and
// endpoints whose scheme disagrees with them are refused before any wait.
func TestParseTLS(t *testing.T) {
	o := Options{DataDir: "/d", PeerURL: "https://m2.ns.svc:2380", ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{"https://m0.ns.svc:2379", "https://m1.ns.svc:2379"}, TLS: tlsFiles,
		PollInterval: DefaultPollInterval, DNSWait: DefaultDNSWait, LivenessAddr: ":2381", LivenessPath: "/livez",
		TerminationLog: DefaultTerminationLog, Exec: []string{"/usr/local/bin/etcd", "--name=m2"}}
	got, err := Parse(o.Args())
	if err != nil {
		t.Fatalf("Parse(%q): %v", o.Args(), err)
	}
	if !reflect.DeepEqual(got, o) {
		t.Errorf("Parse(Args()) = %+v, want %+v", got, o)
	}

	base := []string{"--data-dir=/d", "--peer-url=https://m2.ns.svc:2380", "--initial-cluster-state=existing"}
	files := []string{"--cert-file=" + tlsFiles.CertFile, "--key-file=" + tlsFiles.KeyFile, "--ca-file=" + tlsFiles.CAFile}
	for name, args := range map[string][]string{
		"certificate without key": append(base, "--endpoints=https://m0.ns.svc:2379", files[0], files[2]),
		"certificate without CA":  append(base, "--endpoints=https://m0.ns.svc:2379", files[0], files[1]),
		"http endpoint with TLS":  append(append(base, "--endpoints=https://m0.ns.svc:2379,http://m1.ns.svc:2379"), files...),
		"https endpoint in plain": append(base, "--endpoints=https://m0.ns.svc:2379"),
	} {
		if _, err := Parse(args); err == nil {
			t.Errorf("%s: Parse(%q) accepted", name, args)
		}
	}
}

// TestRunJoinsOverTLS: a joining member of a cluster whose client port demands certificates
// asks the member list with the pod's client certificate, verifies the member by the CA of
// its server certificate, and starts once added. One that trusts another CA never sees itself.
func TestRunJoinsOverTLS(t *testing.T) {
	t.Parallel()
	servers, clients := etcdtest.NewCA(t, "servers"), etcdtest.NewCA(t, "clients")
	seed := etcdtest.StartClusterWith(t, 1, etcdtest.ServeClientTLS(t, servers, clients))[0]
	cert, key := clients.IssueClient(t, "demo-client")
	files := etcdutil.TLSFiles{CertFile: cert, KeyFile: key, CAFile: servers.CertFile}
	joiner := etcdtest.Reserve(t, "m1")
	o := Options{DataDir: joiner.Dir, PeerURL: joiner.PeerURL, ClusterState: etcdutil.ClusterStateExisting,
		Endpoints: []string{etcdtest.HTTPS(seed.ClientURL)}, TLS: files, PollInterval: 10 * time.Millisecond}

	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	defer cancel()
	untrusted := o
	untrusted.TLS = etcdutil.TLSFiles{CertFile: cert, KeyFile: key, CAFile: clients.CertFile} // not the servers' CA
	f := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
	out := &syncBuffer{}
	done := start(ctx, o, f, out)
	untrusting := &countingFactory{Factory: etcdutil.NewFactory(0, 0)}
	refused := start(ctx, untrusted, untrusting, &syncBuffer{})
	eventually(t, "the cluster answers Run over TLS", func() bool { return f.answered.Load() >= 3 })
	eventually(t, "Run with the wrong CA asks", func() bool { return untrusting.asked.Load() >= 2 })

	cli, err := etcdutil.NewFactory(0, 0).New(o.Endpoints, mustConn(t, files))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.MemberAddAsLearner(ctx, joiner.PeerURL); err != nil {
		t.Fatalf("MemberAddAsLearner: %v", err)
	}
	waitStarts(t, done, out)
	if !strings.Contains(out.String(), "member added") {
		t.Errorf("Run logged %q", out)
	}
	if n := untrusting.answered.Load(); n != 0 {
		t.Errorf("a member-init that does not trust the server's CA got %d member lists", n)
	}
	select {
	case err := <-refused:
		t.Errorf("Run with the wrong CA returned %v; it must not see itself added", err)
	default:
	}
}

func mustConn(t *testing.T, f etcdutil.TLSFiles) etcdutil.ConnConfig {
	t.Helper()
	conn, err := f.ConnConfig()
	if err != nil {
		t.Fatalf("ConnConfig: %v", err)
	}
	return conn
}
