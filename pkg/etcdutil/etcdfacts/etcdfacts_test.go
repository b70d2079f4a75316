package etcdfacts

import "testing"

// etcd 3.6 brought --max-learners; 3.5 refuses to start with it, so a version the operator
// cannot read is taken for one without it.
func TestTakesMaxLearners(t *testing.T) {
	for version, want := range map[string]bool{
		"3.6.0": true, "3.6.16": true, "v3.6.16": true, "3.7.3": true, "4.0.0": true,
		"3.5.21": false, "v3.5.35": false, "2.3.8": false, "": false, "latest": false, "3": false,
	} {
		if got := TakesMaxLearners(version); got != want {
			t.Errorf("TakesMaxLearners(%q) = %v, want %v", version, got, want)
		}
	}
}
