package framework

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// WriterClock ties the writer's clock (the node's uptime, which its log's times are in) to
// this machine's, read once (Writer.Clock). It tells when, at the latest, something the writer
// logged happened.
type WriterClock struct {
	// uptime is the writer's clock as read in its pod, no later than after on this machine's.
	uptime float64
	after  time.Time
}

// Latest is the latest time, on this machine's clock, at which something the writer logged at
// t (a time of its log) can have happened.
func (c WriterClock) Latest(t float64) time.Time {
	return c.after.Add(time.Duration((t - c.uptime) * float64(time.Second)))
}

// Clock reads the writer's clock in its pod, which must be running (before Stop). The reading
// is tied to this machine's clock to within the exec's round trip, on the side that keeps
// Latest an upper bound. The machine that runs the tests and the API server are taken to
// share a clock (one host, or the containers of kind's nodes on it).
func (w *Writer) Clock() (WriterClock, error) {
	out, err := w.f.Exec(w.Pod, w.container, w.shell, "-c", "read t _ </proc/uptime; echo $t")
	after := time.Now()
	if err != nil {
		return WriterClock{}, fmt.Errorf("reading writer %s's clock: %w", w.Pod, err)
	}
	up, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
	if err != nil {
		return WriterClock{}, fmt.Errorf("reading writer %s's clock: %w in %q", w.Pod, err, out)
	}
	return WriterClock{uptime: up, after: after}, nil
}

// AckedBefore is the part of log whose puts were acknowledged before when, for certain.
func (log WriteLog) AckedBefore(c WriterClock, when time.Time) WriteLog {
	var out WriteLog
	for i, at := range log.AckedAt {
		if c.Latest(at).Before(when) {
			out.Acked = append(out.Acked, log.Acked[i])
			out.AckedAt = append(out.AckedAt, at)
		}
	}
	return out
}

// VerifySnapshotIn checks cluster, restored from a snapshot taken while the writer wrote (the
// snapshot begun after taken, on this machine's clock): every put of log acknowledged before
// taken is there with its value, and no acknowledged put is missing below the newest put
// the cluster holds. The writer puts one key at a time, each once the one before was answered,
// so an acknowledged put has a lower revision than every put sent after it: a snapshot, the
// keyspace at one revision, that holds put j holds every put acknowledged before j. It fails
// the test otherwise and returns how many acknowledged puts the cluster holds.
func (w *Writer) VerifySnapshotIn(cluster, memberPod string, log WriteLog, clock WriterClock, taken time.Time) int {
	w.f.t.Helper()
	must := log.AckedBefore(clock, taken)
	if len(must.Acked) == 0 {
		w.f.t.Fatalf("writer %s: no put acknowledged before %s to check %s against", w.Pod, taken.Format(time.RFC3339), cluster)
	}
	kvs := w.readBack(cluster, memberPod)
	newest := -1
	for k := range kvs {
		if i, err := strconv.Atoi(strings.TrimPrefix(k, writerPrefix)); err == nil && i > newest {
			newest = i
		}
	}
	var lost []string
	held := 0
	for j, i := range log.Acked {
		key, want := fmt.Sprintf("%s%08d", writerPrefix, i), writerValue(i)
		got, ok := kvs[key]
		switch {
		case ok && got == want:
			held++
		case j < len(must.Acked):
			lost = append(lost, fmt.Sprintf("%s (acknowledged before the snapshot began; read %q)", key, got))
		case i < newest:
			lost = append(lost, fmt.Sprintf("%s (acknowledged before %s%08d, which is there; read %q)", key, writerPrefix, newest, got))
		case ok:
			lost = append(lost, fmt.Sprintf("%s (read %q, want %q)", key, got, want))
		}
	}
	w.f.t.Logf("%s: %d of the writer's %d acknowledged puts, %d of them acknowledged before the snapshot began; newest key ack/%08d",
		cluster, held, len(log.Acked), len(must.Acked), newest)
	if len(lost) > 0 {
		w.f.t.Fatalf("%s: %d acknowledged writes lost or changed, first: %v", cluster, len(lost), lost[:min(len(lost), 10)])
	}
	return held
}
