package framework

import (
	"bytes"
	"testing"
	"time"
)

func TestAckedBefore(t *testing.T) {
	log := WriteLog{Acked: []int{0, 1, 3, 4}, AckedAt: []float64{100.0, 100.5, 101.5, 102.5}}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	// The writer's clock read 101.0 no later than now: its 101.5 is now+0.5s at the latest.
	c := WriterClock{uptime: 101.0, after: now}
	if got := c.Latest(101.5); !got.Equal(now.Add(500 * time.Millisecond)) {
		t.Fatalf("Latest(101.5) = %v, want now+0.5s", got)
	}
	for _, tc := range []struct {
		name string
		when time.Time
		want []int
	}{
		{"before any", now.Add(-2 * time.Second), nil},
		// 100.5 is at the latest now-0.5s: before now; 101.5 may be as late as now+0.5s.
		{"now", now, []int{0, 1}},
		{"exactly at the latest time of a put is not before it", now.Add(500 * time.Millisecond), []int{0, 1}},
		{"after all", now.Add(2 * time.Second), []int{0, 1, 3, 4}},
	} {
		got := log.AckedBefore(c, tc.when)
		if len(got.Acked) != len(tc.want) || len(got.AckedAt) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got.Acked, tc.want)
			continue
		}
		for i := range tc.want {
			if got.Acked[i] != tc.want[i] {
				t.Errorf("%s: %v, want %v", tc.name, got.Acked, tc.want)
			}
		}
	}
}

func TestFillValue(t *testing.T) {
	v := FillValue("big/", 7, 25)
	// What `yes big/00007 | head -c 25` prints.
	if want := []byte("big/00007\nbig/00007\nbig/0"); !bytes.Equal(v, want) {
		t.Fatalf("FillValue = %q, want %q", v, want)
	}
	if v := FillValue("big/", 7, 1<<20); len(v) != 1<<20 {
		t.Fatalf("FillValue of 1 MiB has %d bytes", len(v))
	}
}
