package operator

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/controller"
	etcdfake "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned/fake"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// tlsCluster is a cluster of namespace ns whose spec.tls takes its peer and client
// certificates from the Secrets peer and client ("" for the operator's own).
func tlsCluster(ns, name, peer, client string) *api.EtcdCluster {
	return &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: api.EtcdClusterSpec{Size: 3, TLS: &api.TLSSpec{
			Peer: &api.TLSSource{SecretName: peer}, Client: &api.TLSSource{SecretName: client}}}}
}

// userSecret is a Secret of the user's, labelled so that the operator's cache holds it.
func userSecret(ns, name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{member.LabelManagedBy: member.ManagedByValue}}}
}

// secretKeys is every key the EtcdCluster kind's Secret mapping gives s, sorted.
func secretKeys(t *testing.T, k controller.Kind, secrets any, s *corev1.Secret) []string {
	t.Helper()
	for _, o := range k.Owned {
		if any(o.Informer) != secrets {
			continue
		}
		var keys []string
		if key, ok := o.KeyOf(s); ok {
			keys = append(keys, key)
		}
		if o.KeysOf != nil {
			named, err := o.KeysOf(s)
			if err != nil {
				t.Fatalf("mapping Secret %s: %v", s.Name, err)
			}
			keys = append(keys, named...)
		}
		slices.Sort(keys)
		return keys
	}
	t.Fatal("the EtcdCluster kind has no Secret informer")
	return nil
}

// A labelled Secret wakes every cluster of its namespace whose spec.tls names it, peer or
// client, besides the cluster that owns it; a Secret no cluster names wakes only its owner.
func TestSecretWakesClustersNamingIt(t *testing.T) {
	inf := controller.NewInformers(k8sfake.NewClientset(), etcdfake.NewSimpleClientset(), "", 0)
	k := clusterKind(inf, nil)
	if err := k.Informer.AddIndexers(k.Indexers); err != nil {
		t.Fatalf("adding the kind's indexers: %v", err)
	}
	for _, c := range []*api.EtcdCluster{
		tlsCluster("db", "a", "shared", ""), tlsCluster("db", "b", "b-peer", "shared"),
		tlsCluster("db", "c", "c-peer", "c-client"), tlsCluster("other", "d", "shared", "shared"),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "plain"}},
	} {
		if err := k.Informer.GetIndexer().Add(c); err != nil {
			t.Fatalf("adding cluster %s: %v", c.Name, err)
		}
	}
	owned := userSecret("db", "a-peer-ca")
	owned.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(tlsCluster("db", "a", "", ""),
		api.SchemeGroupVersion.WithKind(clusterKindName))}
	secrets := inf.Kube().Core().V1().Secrets().Informer()
	tests := []struct {
		name   string
		secret *corev1.Secret
		want   []string
	}{
		{"named by one cluster", userSecret("db", "c-client"), []string{"db/c"}},
		{"named by two clusters, peer and client", userSecret("db", "shared"), []string{"db/a", "db/b"}},
		{"named by both ports of one cluster", userSecret("other", "shared"), []string{"other/d"}},
		{"named by none", userSecret("db", "unused"), nil},
		{"owned, named by none", owned, []string{"db/a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := secretKeys(t, k, secrets, tt.secret); !slices.Equal(got, tt.want) {
				t.Errorf("Secret %s/%s wakes %v, want %v", tt.secret.Namespace, tt.secret.Name, got, tt.want)
			}
		})
	}
}

// passCounter is a Syncer that counts each object's passes.
type passCounter struct {
	mu     sync.Mutex
	passes map[string]int
}

func (p *passCounter) Sync(_ context.Context, namespace, name string) (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.passes[namespace+"/"+name]++
	return 0, nil
}

func (p *passCounter) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.passes[key]
}

// waitPasses waits until key has had more than n passes.
func (p *passCounter) waitPasses(t *testing.T, key string, n int, after string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.count(key) <= n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s had %d passes, want a pass more than %d", after, key, p.count(key), n)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
}

// On the running controller, with no resync and passes that ask for none: adding, changing and
// deleting a labelled Secret that a cluster's spec.tls names each wakes that cluster's loop at
// once, and no other cluster's.
func TestSecretChangeWakesClusterLoop(t *testing.T) {
	kube, etcd := k8sfake.NewClientset(), etcdfake.NewSimpleClientset()
	inf := controller.NewInformers(kube, etcd, "", 0)
	passes := &passCounter{passes: map[string]int{}}
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("newMetrics: %v", err)
	}
	ctrl, err := controller.New(controller.Config{Kinds: []controller.Kind{clusterKind(inf, passes)},
		Metrics: m.controller, Log: quietLog()})
	if err != nil {
		t.Fatalf("controller.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	defer func() { cancel(); <-done; inf.Shutdown() }()
	inf.Start(ctx)
	go func() { done <- ctrl.Run(ctx) }()

	for _, c := range []*api.EtcdCluster{tlsCluster("db", "a", "a-peer", ""), tlsCluster("db", "b", "b-peer", "")} {
		if _, err := etcd.EtcdV1alpha1().EtcdClusters("db").Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating cluster %s: %v", c.Name, err)
		}
		passes.waitPasses(t, "db/"+c.Name, 0, "creating the cluster")
	}
	secrets := kube.CoreV1().Secrets("db")
	s := userSecret("db", "a-peer")
	steps := []struct {
		name string
		do   func() error
	}{
		{"adding the Secret", func() error { _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); return err }},
		{"renewing the Secret", func() error {
			s.Data = map[string][]byte{"tls.crt": []byte("renewed")}
			_, err := secrets.Update(ctx, s, metav1.UpdateOptions{})
			return err
		}},
		{"deleting the Secret", func() error { return secrets.Delete(ctx, s.Name, metav1.DeleteOptions{}) }},
	}
	for _, step := range steps {
		n := passes.count("db/a")
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		passes.waitPasses(t, "db/a", n, step.name)
	}
	if got := passes.count("db/b"); got != 1 {
		t.Errorf("cluster b, which names another Secret, had %d passes, want 1", got)
	}
}
