package cluster

import (
	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// planForeign is rule F: a pod or claim with a member's name that is not the cluster's
// (foreign.go) stops every change. The member it is named after may run in that very pod,
// healthy, unseen as the cluster's: a pass that went on would take it for lost and remove or
// replace it, or create its pod on someone else's claim. Nothing is changed until the object
// is gone or renamed; the Degraded condition names it. A foreign Service does not stop the
// planner: no step acts on a Service, and a member is only added once DNS serves its name.
// Nor does a member pod whose IP answers for another etcd cluster: that member is not
// counted (as if it did not answer), and no change is ever sent to that IP.
func planForeign(s State) (Decision, bool) {
	var members []ForeignObject
	for _, f := range s.Foreign {
		if f.Kind == ForeignPod || f.Kind == ForeignClaim {
			members = append(members, f)
		}
	}
	if len(members) == 0 {
		return Decision{}, false
	}
	// The message names every foreign object, the Services too: the user deletes them all.
	return Decision{Blocked: api.ReasonForeignObject, Message: foreignMessage(s.Foreign) +
		"; no change is made to the cluster until each is deleted or renamed (docs/design.md: objects the operator did not make)"}, true
}
