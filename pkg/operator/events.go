package operator

import (
	"k8s.io/client-go/tools/record"
)

// client-go's recorder drops an object's Events past a budget per Event type (its spam
// filter): by default 25 at once, then one every 5 minutes. The operator records one Event per
// action that changes a cluster, and a seven-member cluster's creation alone counts about 40
// (its Services, claims, pods, each member added and promoted): with the default, the last of
// them and most of the next hour's would be dropped. eventBurst and eventRefill leave room for
// a cluster's whole life of actions while still bounding an object that would loop.
const (
	eventBurst  = 200
	eventRefill = 1.0 / 30 // Events a second, once the burst is spent
)

// newEventBroadcaster is the operator's Event broadcaster, with the budget above.
func newEventBroadcaster() record.EventBroadcaster {
	return record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{
		BurstSize: eventBurst,
		QPS:       eventRefill,
	}))
}
