package operator

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// rssFile is the file-backed part of this process's resident set, in KiB.
func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// The binary's read-only pages leave the resident set, and the process goes on running on
// them (they come back as they are touched); its writable mappings are left alone.
func TestDropInitPages(t *testing.T) {
	before := rssFile(t)
	dropped := dropInitPages(logrus.NewEntry(logrus.New()))
	after := rssFile(t)
	t.Logf("RssFile %d KiB -> %d KiB; %d bytes of mappings dropped", before, after, dropped)
	if dropped == 0 || after >= before {
		t.Errorf("RssFile %d KiB -> %d KiB, %d bytes dropped; want the binary's read-only pages out of the resident set", before, after, dropped)
	}
	if s := strings.Repeat("x", 3); s != "xxx" {
		t.Fatal("the process does not run on after its pages were dropped")
	}
}

func TestReadOnlyMappingOf(t *testing.T) {
	const exe = "/etcd-operator"
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"00400000-01586000 r-xp 00000000 00:2f 123 /etcd-operator", true},
		{"01586000-027ae000 r--p 01186000 00:2f 123 /etcd-operator", true},
		{"027ae000-02882000 rw-p 023ae000 00:2f 123 /etcd-operator", false},
		{"02882000-048ce000 rw-p 00000000 00:00 0", false},
		{"7f0000000000-7f0000001000 r--p 00000000 00:2f 9 /lib/other", false},
		{"zz-01 r--p 0 0 0 /etcd-operator", false},
	} {
		if _, _, ok := readOnlyMappingOf(tc.line, exe); ok != tc.ok {
			t.Errorf("readOnlyMappingOf(%q) ok = %v, want %v", tc.line, ok, tc.ok)
		}
	}
}
