package member

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationEvictionRefused records on a member pod that the API server refuses to evict it
// (an EvictionRefusal, as JSON): the rollout reports a refusal that lasts past its bound from
// the time written there, so that an operator restarted counts the same bound. It is written
// at the first refusal under the cluster's current spec and again only when the API server's
// answer changes; the pod it is on goes with the eviction, and a new pod is made without it.
const AnnotationEvictionRefused = "etcd.operator.dev/eviction-refused"

// EvictionRefusal is what AnnotationEvictionRefused holds.
type EvictionRefusal struct {
	// Since is the first refusal under Generation, the cluster's metadata.generation then: a
	// refusal recorded under an earlier spec (a rollout given up since) says nothing of this one.
	Since      time.Time `json:"since"`
	Generation int64     `json:"generation"`
	// Message is the API server's last answer to the eviction.
	Message string `json:"message"`
}

// Encode is the annotation's value.
func (e EvictionRefusal) Encode() string {
	b, _ := json.Marshal(e) // a struct of a time, a number and a string always marshals
	return string(b)
}

// ReadEvictionRefusal reads the refusal recorded on p; false when none is, or the value
// cannot be read (it is then written again at the next refusal).
func ReadEvictionRefusal(p *corev1.Pod) (EvictionRefusal, bool) {
	v, ok := p.Annotations[AnnotationEvictionRefused]
	if !ok {
		return EvictionRefusal{}, false
	}
	var e EvictionRefusal
	if err := json.Unmarshal([]byte(v), &e); err != nil || e.Since.IsZero() {
		return EvictionRefusal{}, false
	}
	return e, true
}
