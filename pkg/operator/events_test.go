package operator

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// countingSink counts the Events the broadcaster writes, new or updated.
type countingSink struct {
	mu      sync.Mutex
	written int
}

func (s *countingSink) add(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written++
	return e, nil
}
func (s *countingSink) Create(e *corev1.Event) (*corev1.Event, error) { return s.add(e) }
func (s *countingSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.add(e) }
func (s *countingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.add(e)
}

func (s *countingSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// A large cluster's creation records one Event per action, more than client-go's default
// budget of 25 per object and type: every one of them reaches the API server.
func TestEventsOfALargeClusterAllWritten(t *testing.T) {
	const events = 60
	b := newEventBroadcaster()
	defer b.Shutdown()
	sink := &countingSink{}
	b.StartRecordingToSink(sink)
	recorder := b.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: componentName})
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "u1"}}
	for i := range events {
		// a reason each: the recorder neither folds them into one Event nor aggregates them
		recorder.Eventf(obj, corev1.EventTypeNormal, fmt.Sprintf("Action%d", i), "action %d", i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for sink.count() < events && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// the recorder writes from a goroutine: none more arrives once all have, nor after the wait
	if n := sink.count(); n != events {
		t.Errorf("%d Events written of %d recorded on one object", n, events)
	}
}
