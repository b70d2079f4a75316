package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	etcdfake "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned/fake"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

func ownerRef(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name,
		UID: types.UID(name + "-uid"), Controller: ptr.To(controller)}
}

func podOwnedBy(refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: refs}}
}

// ownerClusterKey and labelClusterKey map objects to their EtcdCluster as the operator does.
var (
	ownerClusterKey = OwnerKey(api.GroupName, "EtcdCluster")
	labelClusterKey = LabelKey(member.LabelCluster)
)

func TestOwnerClusterKey(t *testing.T) {
	gv := api.SchemeGroupVersion.String()
	tests := []struct {
		name    string
		obj     metav1.Object
		wantKey string
	}{
		{"controller EtcdCluster", podOwnedBy(ownerRef(gv, "EtcdCluster", "a", true)), "ns/a"},
		{"other version of the group", podOwnedBy(ownerRef(api.GroupName+"/v1", "EtcdCluster", "a", true)), "ns/a"},
		{"not the controller", podOwnedBy(ownerRef(gv, "EtcdCluster", "a", false)), ""},
		{"other group", podOwnedBy(ownerRef("example.com/v1", "EtcdCluster", "a", true)), ""},
		{"other kind", podOwnedBy(ownerRef("apps/v1", "StatefulSet", "a", true)), ""},
		{"no owner", podOwnedBy(), ""},
		{"service owned by cluster", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s",
			OwnerReferences: []metav1.OwnerReference{ownerRef(gv, "EtcdCluster", "b", true)}}}, "ns/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, ok := ownerClusterKey(tt.obj)
			if ok != (tt.wantKey != "") || key != tt.wantKey {
				t.Errorf("ownerClusterKey = (%q, %v), want %q", key, ok, tt.wantKey)
			}
		})
	}
}

func TestLabelClusterKey(t *testing.T) {
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-x1",
		Labels: member.ClusterLabels("a")}}
	if key, ok := labelClusterKey(slice); !ok || key != "ns/a" {
		t.Errorf("labelClusterKey = (%q, %v), want ns/a", key, ok)
	}
	slice.Labels = map[string]string{member.LabelManagedBy: member.ManagedByValue}
	if key, ok := labelClusterKey(slice); ok {
		t.Errorf("labelClusterKey of an unlabelled slice = %q, want none", key)
	}
}

// newIdleController builds a controller that is never run, and returns its EtcdCluster
// dispatcher, to inspect what handlers enqueue.
func newIdleController(t *testing.T) *dispatcher {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry(), clusterGauge)
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	inf := NewInformers(k8sfake.NewClientset(), etcdfake.NewSimpleClientset(), "", 0)
	c, err := New(Config{
		Kinds:   []Kind{clusterKind(inf, newFakeSyncer())},
		Metrics: m,
		Log:     logrus.NewEntry(logrus.New()),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.shutDownQueues)
	return c.kind("EtcdCluster")
}

// drain returns the queued keys.
func drain(d *dispatcher) map[string]bool {
	keys := map[string]bool{}
	for d.queue.Len() > 0 {
		k, _ := d.queue.Get()
		keys[k] = true
		d.queue.Done(k)
	}
	return keys
}

func TestHandlersEnqueueClusterKeys(t *testing.T) {
	gv := api.SchemeGroupVersion.String()
	podA := podOwnedBy(ownerRef(gv, "EtcdCluster", "a", true))
	podB := podOwnedBy(ownerRef(gv, "EtcdCluster", "b", true))
	foreign := podOwnedBy(ownerRef("apps/v1", "ReplicaSet", "rs", true))
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-client-x",
		Labels: member.ClusterLabels("a")}}
	cluster := &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}

	checkEnqueued(t, []enqueueCase{
		{"pod add", func(d *dispatcher) { d.ownedHandler(Owned{KeyOf: ownerClusterKey}).OnAdd(podA, false) }, []string{"ns/a"}},
		{"pod of another controller", func(d *dispatcher) { d.ownedHandler(Owned{KeyOf: ownerClusterKey}).OnAdd(foreign, false) }, nil},
		{"pod delete", func(d *dispatcher) { d.ownedHandler(Owned{KeyOf: ownerClusterKey}).OnDelete(podA) }, []string{"ns/a"}},
		{"pod tombstone", func(d *dispatcher) {
			d.ownedHandler(Owned{KeyOf: ownerClusterKey}).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: podA})
		}, []string{"ns/a"}},
		{"pod moved between owners", func(d *dispatcher) {
			d.ownedHandler(Owned{KeyOf: ownerClusterKey}).OnUpdate(podA, podB)
		}, []string{"ns/a", "ns/b"}},
		{"endpointslice by label", func(d *dispatcher) { d.ownedHandler(Owned{KeyOf: labelClusterKey}).OnAdd(slice, false) }, []string{"ns/a"}},
		{"endpointslice tombstone", func(d *dispatcher) {
			d.ownedHandler(Owned{KeyOf: labelClusterKey}).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a-client-x", Obj: slice})
		}, []string{"ns/a"}},
		{"cluster update", func(d *dispatcher) { d.kindHandler().OnUpdate(cluster, cluster) }, []string{"ns/c"}},
		{"cluster tombstone", func(d *dispatcher) {
			d.kindHandler().OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: cluster})
		}, []string{"ns/c"}},
		{"object without metadata", func(d *dispatcher) { d.ownedHandler(Owned{KeyOf: ownerClusterKey}).OnAdd("junk", false) }, nil},
	})
}

func TestStripManagedFields(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	out, err := stripManagedFields(pod)
	if err != nil || out.(*corev1.Pod).ManagedFields != nil {
		t.Errorf("stripManagedFields = (%v, %v), want the pod without managed fields", out, err)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: &appsv1.Deployment{}}
	if out, err := stripManagedFields(tomb); err != nil || out != any(tomb) {
		t.Errorf("stripManagedFields(tombstone) = (%v, %v), want it unchanged", out, err)
	}
}

// enqueueCase fires handler events at an idle controller's dispatcher and names the keys
// they must enqueue, no more.
type enqueueCase struct {
	name string
	fire func(d *dispatcher)
	want []string
}

func checkEnqueued(t *testing.T, cases []enqueueCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			d := newIdleController(t)
			tt.fire(d)
			got := drain(d)
			if len(got) != len(tt.want) {
				t.Fatalf("enqueued %v, want %v", got, tt.want)
			}
			for _, k := range tt.want {
				if !got[k] {
					t.Errorf("enqueued %v, want %v", got, tt.want)
				}
			}
		})
	}
}
