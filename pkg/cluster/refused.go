package cluster

// The API server's refusals of the objects a pass writes: told apart from transient failures,
// and reported in place of the step they refused.

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
)

// refusedByAPIServer reports whether err is the API server refusing an object for good until
// something changes (admission, quota, LimitRange, a missing PriorityClass, an invalid value),
// as opposed to a transient failure worth a quick retry; message is the API server's own.
func refusedByAPIServer(err error) (message string, refused bool) {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return "", false
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
		return "", false
	}
	return status.Status().Message, true
}

// refusedDecision turns a decision whose action the API server refused into one that reports
// the refusal: Degraded says PodRefused with the API server's message, and the pass does not
// try again before whileRefused.
func refusedDecision(d plan.Decision, message string) plan.Decision {
	return plan.Decision{Blocked: api.ReasonPodRefused,
		Message: fmt.Sprintf("the API server refuses %s: %s", d.Message, message)}
}
