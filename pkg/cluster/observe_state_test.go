package cluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// The planner reads the Progressing reason status last reported, to tell the learner a
// scale-up added from one replacing a lost member (plan.reasonFor): only while it is True.
func TestStateReadsLastProgress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status metav1.ConditionStatus
		reason string
		want   api.ConditionReason
	}{
		{"progressing", metav1.ConditionTrue, string(api.ReasonScalingUp), api.ReasonScalingUp},
		{"done", metav1.ConditionFalse, string(api.ReasonReconciled), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: api.EtcdClusterSpec{Size: 3}}
			c.Status.Conditions = []metav1.Condition{{Type: string(api.ConditionProgressing), Status: tc.status, Reason: tc.reason}}
			o := &observation{cluster: c}
			if got := o.state(time.Now()).LastProgress; got != tc.want {
				t.Errorf("LastProgress = %q, want %q", got, tc.want)
			}
		})
	}
}
