package plugin

import (
	"crypto/x509"
	"errors"
	neturl "net/url"
	"os"
	"strings"
	"testing"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// The errors a user meets first read as what is wrong: a cluster that is not there, pods that
// do not run, a forward the API server refuses.
func TestErrorsReadWell(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  *testEnv
		args []string
		want []string
	}{
		{"no such cluster", newTestEnv(), []string{"members", "nope"}, []string{`etcdcluster "nope" not found in namespace "default"`}},
		{"no member pod", newTestEnv(testClusterObj(3)), []string{"defrag", testCluster}, []string{"no member answers: it has no member pod"}},
		{"member pods not running", newTestEnv(testClusterObj(3), pendingPod(0, "ContainerCreating"), pendingPod(1, "ImagePullBackOff")),
			[]string{"move-leader", testCluster}, []string{"no member answers", "pod example-0 is ContainerCreating", "pod example-1 is ImagePullBackOff"}},
		{"a forward refused", newTestEnv(testClusterObj(1), runningPod(0, "n")), []string{"alarm", "list", testCluster},
			[]string{"no member answers", "port-forwarding to pod example-0: error upgrading connection: pod not found"}},
		{"a backup without --to", newTestEnv(testClusterObj(1)), []string{"backup", testCluster}, []string{`required flag(s) "to" not set`}},
		{"no name", newTestEnv(), []string{"status"}, []string{"accepts 1 arg(s), received 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.env.run(tc.args...)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("kubectl etcd %s: %v, want %q in it", strings.Join(tc.args, " "), err, w)
				}
			}
		})
	}
}

// status of a cluster none of whose members answers still shows its phase, conditions and pods,
// and why each member is not asked.
func TestStatusOfAnUnreachableCluster(t *testing.T) {
	c := testClusterObj(3)
	c.Status.Phase = api.PhaseDegraded
	c.Status.Conditions = []metav1.Condition{{Type: string(api.ConditionDegraded), Status: metav1.ConditionTrue, Reason: string(api.ReasonEtcdUnreachable), Message: "no member answers"}}
	e := newTestEnv(c, pendingPod(0, "ContainerCreating"), runningPod(1, "node-b"))
	if err := e.run("status", testCluster); err != nil {
		t.Fatalf("status: %v", err)
	}
	out := e.out.String()
	for _, want := range []string{"Degraded", "EtcdUnreachable", "example-0: pod example-0 is ContainerCreating",
		"example-1: port-forwarding to pod example-1", "no member answers"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// With client TLS the members are asked with the certificate of the cluster's client Secret
// and checked against the client Service's name, which their certificates carry (not the
// address dialled); a Secret missing, or a certificate the members do not trust, is an error
// that names the Secret and quotes none of its key.
func TestClientTLS(t *testing.T) {
	t.Parallel()
	c := testClusterObj(1)
	c.Spec.TLS = &api.TLSSpec{Client: &api.TLSSource{}}
	c.Status.TLS = &api.TLSStatus{ClientSecretName: "example-client-tls"}
	ca, other := etcdtest.NewCA(t, "clients"), etcdtest.NewCA(t, "other")
	serve := func(cfg *embed.Config) {
		for _, urls := range [][]neturl.URL{cfg.ListenClientUrls, cfg.AdvertiseClientUrls} {
			for i := range urls {
				urls[i].Scheme = "https"
			}
		}
		cert, key := ca.Issue(t, cfg.Name+"-server", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, member.ClientServiceHost(c))
		cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = cert, key
		cfg.ClientTLSInfo.TrustedCAFile = ca.CertFile
		cfg.ClientTLSInfo.ClientCertAuth = true
	}
	secret := func(ca *etcdtest.CA) *corev1.Secret {
		certFile, keyFile := ca.IssueClient(t, "client")
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "example-client-tls", Namespace: testNamespace},
			Data:       map[string][]byte{"ca.crt": read(t, ca.CertFile), "tls.crt": read(t, certFile), "tls.key": read(t, keyFile)},
		}
	}

	e := newTestEnv(c, runningPod(0, "node-a"), secret(ca))
	e.startEtcd(t, 1, serve)
	if err := e.run("members", testCluster); err != nil || !strings.Contains(e.out.String(), "https://") {
		t.Fatalf("members over TLS: %q, %v", e.out.String(), err)
	}

	noSecret := newTestEnv(c, runningPod(0, "node-a"))
	noSecret.fwd = e.fwd
	noSecret.Forwarder = e.fwd
	if err := noSecret.run("members", testCluster); err == nil || !strings.Contains(err.Error(), `secret "example-client-tls" not found`) {
		t.Errorf("members without the client Secret: %v", err)
	}
	if err := noSecret.run("status", testCluster); err != nil || !strings.Contains(noSecret.out.String(), `no member answers: the cluster's client certificate: secret "example-client-tls" not found`) {
		t.Errorf("status without the client Secret: %v, want the page with why no member is asked:\n%s", err, noSecret.out.String())
	}

	stranger := secret(other)
	strangerEnv := newTestEnv(c, runningPod(0, "node-a"), stranger)
	strangerEnv.fwd = e.fwd
	strangerEnv.Forwarder = e.fwd
	err := strangerEnv.run("members", testCluster)
	if err == nil || !errors.Is(err, ErrUnreachable) {
		t.Errorf("members with a certificate of another CA: %v, want no member answering", err)
	}
	if err != nil && strings.Contains(err.Error(), strings.Split(string(stranger.Data["tls.key"]), "\n")[1]) {
		t.Errorf("the error quotes the key: %v", err)
	}
}

func read(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
