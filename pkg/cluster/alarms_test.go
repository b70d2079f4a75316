package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// A pass reads etcd's alarms: with NOSPACE raised, the cluster is not Available (writes
// fail) and Degraded names the alarm and the member.
func TestSyncReportsAlarms(t *testing.T) {
	c := newCluster(1)
	c.Status.Size = 1
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-abcde", Namespace: c.Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: member.PeerServiceName(c.Name)}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	seed := memberPod(c, 0, "10.244.0.9", corev1.PodRunning, time.Now().Add(-time.Minute), slice)
	f := newFixture(t, c, seed, slice, member.PeerService(c), member.ClientService(c))
	etcd := newFakeEtcd(t, c, "10.244.0.9")
	etcd.alarms = []etcdutil.Alarm{{MemberID: 1, Type: etcdutil.AlarmNoSpace}}
	f.with(func(d *Deps) { d.Etcd = etcd })
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	updates := f.actions("update", "etcdclusters")
	if len(updates) != 1 {
		t.Fatalf("%d status writes, want 1", len(updates))
	}
	st := updates[0].(k8stesting.UpdateAction).GetObject().(*api.EtcdCluster).Status
	avail := meta.FindStatusCondition(st.Conditions, string(api.ConditionAvailable))
	deg := meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded))
	if avail == nil || avail.Status != metav1.ConditionFalse || avail.Reason != string(api.ReasonAlarmNoSpace) {
		t.Errorf("Available = %+v, want False AlarmNoSpace", avail)
	}
	if deg == nil || deg.Status != metav1.ConditionTrue || deg.Reason != string(api.ReasonAlarmNoSpace) ||
		!strings.Contains(deg.Message, "NOSPACE raised by demo-0 (1)") {
		t.Errorf("Degraded = %+v, want AlarmNoSpace naming demo-0", deg)
	}
}
