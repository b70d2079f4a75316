package framework

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

func TestParseWriteLog(t *testing.T) {
	out := "ACK 0 100.10\nACK 1 100.20\nFAIL 2 100.21\nFAIL 3 102.21\nACK 4 102.50\nACK 5 102.60\nDONE\n"
	log, err := parseWriteLog(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Acked) != 4 || log.Acked[2] != 4 || log.Failed != 2 {
		t.Fatalf("parsed %+v, want acks 0 1 4 5 and 2 failures", log)
	}
	if _, err := parseWriteLog("ACK x 1.0\n"); err == nil {
		t.Fatal("a bad sequence number was accepted")
	}
}

func TestLongestWait(t *testing.T) {
	log := WriteLog{Acked: []int{0, 1, 4, 5, 6}, AckedAt: []float64{100.1, 100.2, 102.5, 102.6, 102.7}}
	for _, tc := range []struct {
		name  string
		since WriteLog
		want  float64
	}{
		{"the whole log", WriteLog{}, 2.3},
		// the wait that began before since counts from since's last acknowledged put
		{"since the second put", WriteLog{AckedAt: log.AckedAt[:2]}, 2.3},
		{"since the third put", WriteLog{AckedAt: log.AckedAt[:3]}, 0.1},
		{"nothing new", log, 0},
	} {
		if got := log.LongestWait(tc.since); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("%s: LongestWait = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMostConsecutiveFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  string
		want int
	}{
		{"none failed", "ACK 0 1\nACK 1 2\n", 0},
		{"each failure retried once", "FAIL 0 1\nACK 1 2\nFAIL 2 3\nACK 3 4\nFAIL 4 5\n", 1},
		{"a run in the middle", "ACK 0 1\nFAIL 1 2\nFAIL 2 3\nFAIL 3 4\nACK 4 5\nFAIL 5 6\n", 3},
		{"a run at the start", "FAIL 0 1\nFAIL 1 2\nACK 2 3\n", 2},
		{"a run at the end", "ACK 0 1\nFAIL 1 2\nFAIL 2 3\nDONE\n", 2},
		{"nothing acknowledged", "FAIL 0 1\nFAIL 1 2\n", 2},
	} {
		log, err := parseWriteLog(tc.log)
		if err != nil {
			t.Fatal(err)
		}
		if got := log.MostConsecutiveFailures(); got != tc.want {
			t.Errorf("%s: MostConsecutiveFailures = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The plain writer builds each key and value in base64 from writerTables by splitting the
// 8-digit sequence number into 2, 3 and 3 digits: that must give exactly the base64 of the
// key and of writerValue, which Verify reads back.
func TestWriterTablesSpellKeysAndValues(t *testing.T) {
	tables := map[string]string{}
	for _, line := range strings.Split(writerTables(), "\n") {
		for _, a := range strings.Fields(line) {
			name, value, _ := strings.Cut(a, "=")
			tables[name] = value
		}
	}
	if len(tables) != 100+100+1000 {
		t.Fatalf("%d table entries, want 1200", len(tables))
	}
	for _, i := range []int{0, 7, 42, 999, 1000, 123456, 98765432, 99999999} {
		s := fmt.Sprintf("%08d", i)
		a, b, c := s[:2], s[2:5], s[5:]
		key := "YWNr" + tables["K_"+a] + tables["T_"+b] + tables["T_"+c]
		value := tables["V_"+a] + tables["T_"+b] + tables["T_"+c]
		if want := base64.StdEncoding.EncodeToString([]byte(writerPrefix + s)); key != want {
			t.Errorf("key of %d: %s, want %s", i, key, want)
		}
		if want := base64.StdEncoding.EncodeToString([]byte(writerValue(i))); value != want {
			t.Errorf("value of %d: %s, want %s", i, value, want)
		}
	}
}
