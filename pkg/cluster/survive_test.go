package cluster

import (
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// A panic in a goroutine a pass starts ends that goroutine alone, logged; the test binary
// would die with it otherwise.
func TestSurviveRecoversAGoroutine(t *testing.T) {
	logger, hook := test.NewNullLogger()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer survive(logrus.NewEntry(logger), "asking a member")
		var m map[int]int
		m[0]++
	})
	wg.Wait()
	if e := hook.LastEntry(); e == nil || e.Level != logrus.ErrorLevel {
		t.Fatalf("log %v, want the panic logged as an error", e)
	}
}
