package plan

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// planForeign is rule F: a pod or claim with a member's name that is not the cluster's
// (pkg/cluster/foreign.go) stops every change. The member it is named after may run in that very pod,
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
	// The message names every foreign object, the Services too: the user deletes them all. A
	// claim may hold data, though: it is never deleted on the operator's word alone.
	msg := ForeignMessage(s.Foreign) +
		"; no change is made to the cluster until each is deleted or renamed (docs/design.md: objects the operator did not make)"
	for _, f := range members {
		if f.Kind == ForeignClaim {
			msg += "; before deleting a claim, make sure it holds no data you need (a claim that lost the cluster's labels may still be a member's: label it back instead)"
			break
		}
	}
	return Decision{Blocked: api.ReasonForeignObject, Message: msg}, true
}

// ForeignKind is the kind of a foreign object.
type ForeignKind string

// The kinds of objects the operator names after a cluster or its members.
const (
	ForeignPod     ForeignKind = "Pod"
	ForeignClaim   ForeignKind = "PersistentVolumeClaim"
	ForeignService ForeignKind = "Service"
)

// ForeignObject is an object with the name of one of the cluster's objects that is not the
// cluster's.
type ForeignObject struct {
	Kind ForeignKind
	Name string
	UID  types.UID
	// Ordinal is the member the object is named after; -1 for a Service.
	Ordinal int
	// Owner says who controls it instead ("no controller", "EtcdCluster a-client").
	Owner string
}

// String names the object, its kind and who controls it, as messages and Events say it.
func (f ForeignObject) String() string {
	return fmt.Sprintf("%s %s (%s)", f.Kind, f.Name, f.Owner)
}

// ForeignMessage names the foreign objects, for the Degraded condition.
func ForeignMessage(foreign []ForeignObject) string {
	names := make([]string, 0, len(foreign))
	for _, f := range foreign {
		names = append(names, f.String())
	}
	slices.Sort(names)
	return "not this cluster's, left alone: " + strings.Join(names, ", ")
}
