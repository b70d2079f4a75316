package framework

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scriptedKubectl writes a kubectl that prints, on its n-th run, the n-th of versions (the last
// one on every later run) as a watch would, then exits 0 as a watch whose request timeout
// ended does; it counts its runs in a file beside it.
func scriptedKubectl(t *testing.T, versions ...string) *Framework {
	t.Helper()
	dir := t.TempDir()
	var cases strings.Builder
	for i, v := range versions {
		pattern := fmt.Sprint(i + 1)
		if i == len(versions)-1 {
			pattern = "*"
		}
		fmt.Fprintf(&cases, "%s) echo '%s' ;;\n", pattern, v)
	}
	script := fmt.Sprintf("#!/bin/sh\nn=$(( $(cat %[1]s/runs 2>/dev/null || echo 0) + 1 ))\necho $n > %[1]s/runs\ncase $n in\n%[2]sesac\n",
		dir, cases.String())
	path := filepath.Join(dir, "kubectl")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Framework{kubectl: path}
}

func phaseIs(want string) func(json.RawMessage) (bool, error) {
	return func(raw json.RawMessage) (bool, error) {
		var o struct{ Phase string }
		if err := json.Unmarshal(raw, &o); err != nil {
			return false, err
		}
		return o.Phase == want, fmt.Errorf("phase %s", o.Phase)
	}
}

// TestWatchJSONStartsAgain: a kubectl watch that ends (its request timeout) without the
// version waited for is started again, and the wait sees what the next one prints.
func TestWatchJSONStartsAgain(t *testing.T) {
	f := scriptedKubectl(t, `{"phase":"Pending"}`, `{"phase":"Pending"}`, `{"phase":"Running"}`)
	if err := f.WatchJSON(time.Minute, "the object", phaseIs("Running"), "get", "thing"); err != nil {
		t.Fatal(err)
	}
}

// TestWatchJSONTimesOut: a wait that never sees its version ends at its timeout and says so,
// with cond's last word.
func TestWatchJSONTimesOut(t *testing.T) {
	f := scriptedKubectl(t, `{"phase":"Pending"}`)
	err := f.WatchJSON(time.Second, "the object", phaseIs("Running"), "get", "thing")
	if err == nil || !strings.Contains(err.Error(), "not there after 1s") || !strings.Contains(err.Error(), "phase Pending") {
		t.Errorf("WatchJSON = %v, want it not there after 1s, last phase Pending", err)
	}
}
