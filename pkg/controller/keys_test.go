package controller

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	etcdfake "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned/fake"
)

// peerSecretIndex indexes the test's EtcdClusters by the Secret spec.tls.peer names.
const peerSecretIndex = "peerSecret"

func peerSecret(obj any) ([]string, error) {
	c, ok := obj.(*api.EtcdCluster)
	if !ok || c.Spec.TLS == nil || c.Spec.TLS.Peer == nil || c.Spec.TLS.Peer.SecretName == "" {
		return nil, nil
	}
	return []string{objectKey(c.Namespace, c.Spec.TLS.Peer.SecretName)}, nil
}

// clusterNaming is a cluster of namespace ns whose spec.tls.peer names the Secret secret.
func clusterNaming(ns, name, secret string) *api.EtcdCluster {
	return &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: api.EtcdClusterSpec{TLS: &api.TLSSpec{Peer: &api.TLSSource{SecretName: secret}}}}
}

// namingIndexer holds clusters a and b naming ns/shared, c naming ns/own, and d, of another
// namespace, naming other/shared.
func namingIndexer(t *testing.T) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{peerSecretIndex: peerSecret})
	for _, c := range []*api.EtcdCluster{clusterNaming("ns", "a", "shared"), clusterNaming("ns", "b", "shared"),
		clusterNaming("ns", "c", "own"), clusterNaming("other", "d", "shared")} {
		if err := idx.Add(c); err != nil {
			t.Fatalf("adding %s: %v", c.Name, err)
		}
	}
	return idx
}

func secretOwnedBy(name string, refs ...metav1.OwnerReference) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: refs}}
}

// An owned informer with both mappings enqueues its owner's key and the key of every object
// that names it, on every event, tombstones included; a mapping that fails loses only its keys.
func TestOwnedHandlerEnqueuesEveryKey(t *testing.T) {
	gv := api.SchemeGroupVersion.String()
	naming := IndexKeys(namingIndexer(t), peerSecretIndex)
	both := Owned{KeyOf: ownerClusterKey, KeysOf: naming}
	shared := secretOwnedBy("shared")
	own := secretOwnedBy("own", ownerRef(gv, "EtcdCluster", "o", true))
	lone := secretOwnedBy("lone")
	failing := Owned{KeyOf: ownerClusterKey, KeysOf: func(metav1.Object) ([]string, error) {
		return []string{"ns/ignored"}, errors.New("no index")
	}}

	checkEnqueued(t, []enqueueCase{
		{"named by two clusters", func(d *dispatcher) { d.ownedHandler(both).OnAdd(shared, false) }, []string{"ns/a", "ns/b"}},
		{"owned and named", func(d *dispatcher) { d.ownedHandler(both).OnAdd(own, false) }, []string{"ns/o", "ns/c"}},
		{"named by none, owned by none", func(d *dispatcher) { d.ownedHandler(both).OnAdd(lone, false) }, nil},
		{"update", func(d *dispatcher) { d.ownedHandler(both).OnUpdate(shared, shared) }, []string{"ns/a", "ns/b"}},
		{"delete", func(d *dispatcher) { d.ownedHandler(both).OnDelete(own) }, []string{"ns/o", "ns/c"}},
		{"tombstone", func(d *dispatcher) {
			d.ownedHandler(both).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/shared", Obj: shared})
		}, []string{"ns/a", "ns/b"}},
		{"names only", func(d *dispatcher) { d.ownedHandler(Owned{KeysOf: naming}).OnAdd(own, false) }, []string{"ns/c"}},
		{"failing mapping keeps the owner", func(d *dispatcher) { d.ownedHandler(failing).OnAdd(own, false) }, []string{"ns/o"}},
	})
}

// New adds a kind's Indexers to its informer, accepts an owned informer mapped by KeysOf
// alone, and refuses one with no mapping.
func TestNewRegistersIndexersAndMappings(t *testing.T) {
	newController := func(inf *Informers, k Kind) error {
		m, err := NewMetrics(prometheus.NewRegistry(), clusterGauge)
		if err != nil {
			t.Fatalf("NewMetrics: %v", err)
		}
		c, err := New(Config{Kinds: []Kind{k}, Metrics: m, Log: logrus.NewEntry(logrus.New())})
		if err == nil {
			c.shutDownQueues()
		}
		return err
	}
	inf := NewInformers(k8sfake.NewClientset(), etcdfake.NewSimpleClientset(), "", 0)
	k := clusterKind(inf, newFakeSyncer())
	k.Indexers = cache.Indexers{peerSecretIndex: peerSecret}
	secrets := inf.Kube().Core().V1().Secrets().Informer()
	k.Owned = append(k.Owned, Owned{Informer: secrets, KeysOf: IndexKeys(k.Informer.GetIndexer(), peerSecretIndex)})
	if err := newController(inf, k); err != nil {
		t.Fatalf("New refused a kind with Indexers and a KeysOf mapping: %v", err)
	}
	if _, ok := k.Informer.GetIndexer().GetIndexers()[peerSecretIndex]; !ok {
		t.Errorf("the kind's informer has indexers %v, want %s", k.Informer.GetIndexer().GetIndexers(), peerSecretIndex)
	}

	inf = NewInformers(k8sfake.NewClientset(), etcdfake.NewSimpleClientset(), "", 0)
	k = clusterKind(inf, newFakeSyncer())
	k.Owned = append(k.Owned, Owned{Informer: inf.Kube().Core().V1().Secrets().Informer()})
	if err := newController(inf, k); err == nil {
		t.Error("New accepted an owned informer with neither KeyOf nor KeysOf")
	}
}
