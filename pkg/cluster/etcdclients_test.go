package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/pki"
)

// closingFactory opens clients that only remember how they were opened and whether they
// were closed.
type closingFactory struct {
	mu     sync.Mutex
	opened []*closingClient
}

type closingClient struct {
	// Client is nil: the clients of these tests are opened, kept and closed, never called.
	etcdutil.Client
	endpoints []string
	tls       bool
	mu        sync.Mutex
	closed    bool
}

func (f *closingFactory) New(endpoints []string, conn etcdutil.ConnConfig) (etcdutil.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &closingClient{endpoints: endpoints, tls: conn.TLS != nil}
	f.opened = append(f.opened, c)
	return c, nil
}

func (c *closingClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *closingClient) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// count is how many clients were opened, and how many of them are closed.
func (f *closingFactory) count() (opened, closed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.opened {
		if c.isClosed() {
			closed++
		}
	}
	return len(f.opened), closed
}

// open is the number of clients kept, every cluster's.
func (k *etcdClients) open() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, kept := range k.clusters {
		n += len(kept)
	}
	return n
}

// clientSecret is the cluster's client Secret, with a client certificate of its own CA.
func clientSecret(t *testing.T, c *api.EtcdCluster) *corev1.Secret {
	t.Helper()
	now := time.Now()
	ca, err := pki.NewCA("client CA", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.Issue(ca, pki.Request{CommonName: "etcd-operator", Usages: pki.ClientAuth, Lifetime: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: member.ClientTLSSecretName(c.Name), Namespace: c.Namespace,
			Labels: member.ClusterLabels(c.Name), OwnerReferences: []metav1.OwnerReference{member.OwnerReference(c)}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{caKey: ca.CertPEM, corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM},
	}
}

// clientsPasses runs passes of etcdClients for one cluster: each asks for clients over some
// endpoints, then releases the cluster's others.
type clientsPasses struct {
	t       *testing.T
	c       *api.EtcdCluster
	k       *etcdClients
	etcd    *closingFactory
	rec     *fakeRecorder
	secrets cache.Indexer
}

func newClientsPasses(t *testing.T) *clientsPasses {
	kube := kubefake.NewClientset()
	secrets := kubeinformers.NewSharedInformerFactory(kube, 0).Core().V1().Secrets()
	p := &clientsPasses{t: t, c: newCluster(3), etcd: &closingFactory{}, rec: &fakeRecorder{}, secrets: secrets.Informer().GetIndexer()}
	p.k = newEtcdClients(p.etcd, conns{secrets: secrets.Lister(), kube: kube}, p.rec)
	return p
}

func (p *clientsPasses) pass(endpoints ...[]string) []*closingClient {
	p.t.Helper()
	var got []*closingClient
	for _, eps := range endpoints {
		cli, err := p.k.get(context.Background(), p.c, eps)
		if err != nil {
			p.t.Fatalf("get %v: %v", eps, err)
		}
		got = append(got, cli.(*closingClient))
	}
	p.k.release(p.c.Namespace, p.c.Name)
	return got
}

// expect checks the clients opened and closed so far, and that the metrics were told of each.
func (p *clientsPasses) expect(step string, opened, closed int) {
	p.t.Helper()
	if o, cl := p.etcd.count(); o != opened || cl != closed {
		p.t.Errorf("%s: %d clients opened, %d closed; want %d and %d", step, o, cl, opened, closed)
	}
	told := map[string]int{}
	for _, call := range p.rec.calls {
		told[call]++
	}
	if told["opened ns/demo"] != opened || told["closed ns/demo"] != closed {
		p.t.Errorf("%s: the metrics were told of %d clients opened and %d closed, want %d and %d",
			step, told["opened ns/demo"], told["closed ns/demo"], opened, closed)
	}
}

// A client is kept while passes ask for the same members the same way, in any order, and
// closed at the end of the first pass that does not: a member's pod made again at another
// address, a client port moved onto TLS, a renewed client certificate. Forgetting the cluster
// closes the rest, and the metrics are told of each client opened and closed.
func TestEtcdClientsFollowTheMembersAndTheSettings(t *testing.T) {
	p := newClientsPasses(t)
	a, b, c := "http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"
	first := p.pass([]string{a, b, c}, []string{a, b})
	p.expect("first pass", 2, 0)
	if again := p.pass([]string{c, a, b}, []string{b, a}); again[0] != first[0] || again[1] != first[1] {
		t.Error("the same members in another order got other clients")
	}
	p.expect("same members", 2, 0)

	moved := "http://10.0.0.9:2379"
	p.pass([]string{moved, b, c}, []string{moved, b})
	p.expect("a member at a new address", 4, 2)
	for _, cli := range first {
		if !cli.isClosed() {
			t.Errorf("the client over %v, with a member's old address, is still open", cli.endpoints)
		}
	}

	if err := p.secrets.Add(clientSecret(t, p.c)); err != nil {
		t.Fatal(err)
	}
	tlsEndpoints := []string{"https://10.0.0.9:2379", "https://10.0.0.2:2379", "https://10.0.0.3:2379"}
	if overTLS := p.pass(tlsEndpoints); !overTLS[0].tls {
		t.Error("the client over https endpoints was opened without TLS")
	}
	p.expect("the client port on TLS", 5, 4)
	p.pass(tlsEndpoints)
	p.expect("the same certificate", 5, 4)
	if err := p.secrets.Update(clientSecret(t, p.c)); err != nil {
		t.Fatal(err)
	}
	p.pass(tlsEndpoints)
	p.expect("a renewed certificate", 6, 5)

	p.k.forget(p.c.Namespace, p.c.Name)
	p.expect("forgotten", 6, 6)
	if n := p.k.open(); n != 0 {
		t.Errorf("%d clients kept after the cluster was forgotten", n)
	}
}

// Without its client certificate the cluster's members are not dialed over TLS at all.
func TestEtcdClientsWithoutTheClientCertificate(t *testing.T) {
	c := newCluster(3)
	etcd := &closingFactory{}
	k := newEtcdClients(etcd, conns{kube: kubefake.NewClientset()}, nil)
	if _, err := k.get(context.Background(), c, []string{"https://10.0.0.1:2379"}); !errors.Is(err, errNoClientCertificate) {
		t.Errorf("get without the client Secret = %v, want errNoClientCertificate", err)
	}
	if opened, _ := etcd.count(); opened != 0 {
		t.Errorf("%d clients opened without a certificate", opened)
	}
}

// The clients of many clusters are kept, released and forgotten from their loops at once,
// while the metrics read how many are open.
func TestEtcdClientsConcurrentClusters(t *testing.T) {
	etcd := &closingFactory{}
	k := newEtcdClients(etcd, conns{kube: kubefake.NewClientset()}, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		c := newCluster(3)
		c.Name = fmt.Sprintf("demo-%d", i)
		wg.Go(func() {
			for pass := range 20 {
				ep := fmt.Sprintf("http://10.0.%d.%d:2379", i, pass%3)
				if _, err := k.get(context.Background(), c, []string{ep}); err != nil {
					t.Errorf("get: %v", err)
				}
				k.release(c.Namespace, c.Name)
				_ = k.open()
			}
			k.forget(c.Namespace, c.Name)
		})
	}
	wg.Wait()
	if opened, closed := etcd.count(); opened != closed || k.open() != 0 {
		t.Errorf("%d clients opened, %d closed, %d kept after every cluster was forgotten", opened, closed, k.open())
	}
}
