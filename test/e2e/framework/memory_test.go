package framework

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchReadings: the readings are taken until Stop, a failed one is counted and skipped,
// and Stop may be called again.
func TestWatchReadings(t *testing.T) {
	var calls atomic.Int32
	w := watchReadings(time.Millisecond, func() (int, error) {
		n := int(calls.Add(1))
		if n%2 == 0 {
			return 0, errors.New("proxy timed out")
		}
		return n, nil
	})
	if err := Poll(10*time.Second, func() (bool, error) { return len(w.Readings()) >= 3, nil }); err != nil {
		t.Fatal(err)
	}
	readings, failed, last := w.Stop()
	if len(readings) < 3 || failed < 2 || last == nil {
		t.Errorf("readings %v, %d failed (last %v)", readings, failed, last)
	}
	for _, r := range readings {
		if r%2 == 0 {
			t.Errorf("a failed reading kept: %v", readings)
		}
	}
	after := calls.Load()
	again, _, _ := w.Stop()
	if len(again) != len(readings) || calls.Load() != after {
		t.Errorf("readings went on after Stop: %d calls, then %d", after, calls.Load())
	}
}
