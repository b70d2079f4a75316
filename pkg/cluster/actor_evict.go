package cluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
)

// evictionRefused is the API server's refusal to evict a member pod for now: the disruption
// budget allows no disruption (429 TooManyRequests), or more than one budget covers the pod,
// which the Eviction API does not support (500, until one of them goes). The pass waits.
type evictionRefused struct {
	pod, message string
}

func (e *evictionRefused) Error() string {
	return fmt.Sprintf("the API server refuses to evict pod %s for now: %s", e.pod, e.message)
}

func (m *realActor) EvictPod(ctx context.Context, c *api.EtcdCluster, pod *corev1.Pod, why string) (Result, error) {
	err := m.kube.CoreV1().Pods(c.Namespace).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: c.Namespace},
		DeleteOptions: ptrTo(uidPrecondition(pod.UID)),
	})
	var status apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Gone, or replaced by a newer pod of that name (the UID precondition failed).
		return Result{}, nil
	case (apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err)) && errors.As(err, &status):
		refused := &evictionRefused{pod: pod.Name, message: status.Status().Message}
		// The Event is the caller's (recordEvictionRefusal): once per refusal, not per pass.
		m.logFor(c, pod.Name, plan.ActionRollMember).WithField("answer", refused.message).Info("eviction refused for now; the rollout waits")
		return Result{}, fmt.Errorf("evicting pod %s: %w", pod.Name, refused)
	case err != nil:
		return Result{}, fmt.Errorf("evicting pod %s: %w", pod.Name, err)
	}
	m.logFor(c, pod.Name, plan.ActionRollMember).Info("evicted member pod")
	m.event(c, corev1.EventTypeNormal, EventPodEvicted, "Evicted pod %s within the disruption budget (%s)", pod.Name, why)
	return Result{Changed: true}, nil
}

// evictionWait turns a decision whose eviction the API server refused into the rollout's wait
// for the disruption budget: Progressing keeps its reason and says what the API server said,
// and Degraded what the planner reports of refusals that lasted past the rollout's bound.
func evictionWait(d plan.Decision, refused *evictionRefused) plan.Decision {
	return plan.Decision{Progress: d.Progress, Blocked: d.Blocked, Report: d.Report,
		Message: fmt.Sprintf("waiting for the disruption budget: %s (%s)", refused.Error(), d.Message)}
}

// evicted is a decision whose eviction the API server has just allowed: refusals reported
// before it (EvictionRefused) are over.
func evicted(d plan.Decision) plan.Decision {
	if d.Blocked == api.ReasonEvictionRefused {
		d.Blocked, d.Report = "", ""
	}
	return d
}
