package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// The etcd container's restart count is recorded when the pod is seen ready after a restart,
// and on a pod that has no record (made by an earlier operator), through the actor; never
// while the container is not ready, never again when it is unchanged, never on a pod going.
func TestRecordReadyRestarts(t *testing.T) {
	c := newCluster(3)
	o := observed(c)
	status := func(ord int, restarts int32, ready bool) {
		o.pods[ord].Status.ContainerStatuses = []corev1.ContainerStatus{{Name: member.EtcdContainerName,
			RestartCount: restarts, Ready: ready}}
	}
	status(0, 2, true)  // ready again after two restarts (a node rebooted twice): recorded
	status(1, 4, false) // crash-looping since it was made: its 0 is kept
	status(2, 3, false) // an earlier operator's pod, no record: counted from now
	delete(o.pods[2].Annotations, member.AnnotationReadyRestarts)
	going := o.pods[0].DeepCopy()
	going.Name, going.DeletionTimestamp = "demo-3", &metav1.Time{Time: time.Now()}
	delete(going.Annotations, member.AnnotationReadyRestarts)
	o.pods[3] = going
	cache := maps.Clone(o.pods) // the pods as the informer's cache holds them
	fa := &fakeActor{}
	r := &Reconciler{deps: Deps{Log: quietLog()}, control: fa}
	if err := r.recordReadyRestarts(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want := []string{"AnnotatePod demo-0 " + member.AnnotationReadyRestarts + "=2", "AnnotatePod demo-2 " + member.AnnotationReadyRestarts + "=3"}
	if !slices.Equal(fa.calls, want) {
		t.Errorf("calls %q, want %q", fa.calls, want)
	}
	for ord, v := range map[int]string{0: "2", 1: "0", 2: "3"} {
		if got := o.pods[ord].Annotations[member.AnnotationReadyRestarts]; got != v {
			t.Errorf("the pass reads %s=%q on pod %d, want %q", member.AnnotationReadyRestarts, got, ord, v)
		}
	}
	if got := cache[0].Annotations[member.AnnotationReadyRestarts]; got != "0" {
		t.Errorf("the cached pod was changed (%s=%q): the pass must change a copy", member.AnnotationReadyRestarts, got)
	}

	// The next pass, from the pods as written: nothing to write.
	fa.calls = nil
	if err := r.recordReadyRestarts(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if len(fa.calls) != 0 {
		t.Errorf("an idle pass wrote %q", fa.calls)
	}
}

// crashLoopFixture is a cluster of three members, demo-0 and demo-1 answering, demo-2 not;
// trouble sets demo-2's pod's status.
func crashLoopFixture(t *testing.T, trouble func(*corev1.Pod)) (*fixture, *removingEtcd) {
	c := newCluster(3)
	c.Status.Size = 3
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-abcde", Namespace: c.Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: member.PeerServiceName(c.Name)}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	var objs []runtime.Object
	etcd := &removingEtcd{fakeEtcd: &fakeEtcd{t: t, status: map[string]etcdutil.Status{}}}
	for o := range 3 {
		ip := fmt.Sprintf("10.244.0.%d", 10+o)
		p := memberPod(c, o, ip, corev1.PodRunning, time.Now().Add(-time.Hour), slice)
		id := uint64(o + 1)
		etcd.members = append(etcd.members, etcdutil.Member{ID: id, Name: p.Name, PeerURLs: []string{member.PeerURL(c, o)}})
		if o < 2 {
			etcd.status[member.PodClientURL(ip, member.ClientTLS(c))] = etcdutil.Status{ID: id, Leader: 1, Version: "3.6.16"}
		} else {
			trouble(p)
		}
		objs = append(objs, p)
	}
	objs = append(objs, c, slice, member.PeerService(c), member.ClientService(c))
	f := newFixture(t, objs...)
	f.with(func(d *Deps) { d.Etcd = etcd })
	return f, etcd
}
