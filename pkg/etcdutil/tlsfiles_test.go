package etcdutil_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
)

// listWith asks the member at endpoint for the member list, dialling with conn.
func listWith(t *testing.T, endpoint string, conn etcdutil.ConnConfig) error {
	t.Helper()
	cli, err := etcdutil.NewFactory(0, 0).New([]string{endpoint}, conn)
	if err != nil {
		t.Fatalf("opening client: %v", err)
	}
	defer cli.Close()
	_, err = cli.MemberList(context.Background())
	return err
}

// A client of a member that demands client certificates dials with the files of a pod: its
// certificate, read again at every handshake (a renewed Secret), and the CA it verifies the
// member by, under the name of the URL dialled. Another CA on either side is refused.
func TestTLSFiles(t *testing.T) {
	t.Parallel()
	servers, clients, stranger := etcdtest.NewCA(t, "servers"), etcdtest.NewCA(t, "clients"), etcdtest.NewCA(t, "stranger")
	m := etcdtest.StartClusterWith(t, 1, etcdtest.ServeClientTLS(t, servers, clients))[0]
	endpoint := etcdtest.HTTPS(m.ClientURL)
	cert, key := clients.IssueClient(t, "demo-client")
	files := etcdutil.TLSFiles{CertFile: cert, KeyFile: key, CAFile: servers.CertFile}
	conn, err := files.ConnConfig()
	if err != nil {
		t.Fatalf("ConnConfig: %v", err)
	}
	if err := listWith(t, endpoint, conn); err != nil {
		t.Fatalf("MemberList with the pod's files: %v", err)
	}

	wrongCA := files
	wrongCA.CAFile = stranger.CertFile
	if conn, err := wrongCA.ConnConfig(); err != nil {
		t.Fatalf("ConnConfig: %v", err)
	} else if err := listWith(t, endpoint, conn); err == nil {
		t.Error("a member whose certificate the CA file did not sign was trusted")
	}

	// The same configuration, its certificate files replaced by one the member does not
	// trust: the next handshake presents the new one.
	strangerCert, strangerKey := stranger.IssueClient(t, "intruder")
	for from, to := range map[string]string{strangerCert: cert, strangerKey: key} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := listWith(t, endpoint, conn); err == nil {
		t.Error("the member accepted a client certificate of another CA: the files were not read again, or not checked")
	}
}

func TestTLSFilesRefused(t *testing.T) {
	ca := etcdtest.NewCA(t, "clients")
	cert, key := ca.IssueClient(t, "c")
	if conn, err := (etcdutil.TLSFiles{}).ConnConfig(); err != nil || conn.TLS != nil {
		t.Errorf("no files: %+v, %v; want plaintext", conn, err)
	}
	secret, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]etcdutil.TLSFiles{
		"no key":           {CertFile: cert, CAFile: ca.CertFile},
		"no CA":            {CertFile: cert, KeyFile: key},
		"CA file missing":  {CertFile: cert, KeyFile: key, CAFile: ca.CertFile + ".gone"},
		"CA file is a key": {CertFile: cert, KeyFile: key, CAFile: key},
		"key is the cert":  {CertFile: cert, KeyFile: cert, CAFile: ca.CertFile},
		"cert is the key":  {CertFile: key, KeyFile: key, CAFile: ca.CertFile},
	} {
		_, err := f.ConnConfig()
		if err == nil {
			t.Errorf("%s: ConnConfig accepted %+v", name, f)
			continue
		}
		if strings.Contains(err.Error(), strings.TrimSpace(string(secret))[40:80]) {
			t.Errorf("%s: the error quotes the private key: %v", name, err)
		}
	}
}
