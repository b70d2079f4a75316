package plan_test

import (
	"testing"

	. "github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
)

// TestActionsCarryPodVersion: an action that builds a member's pod carries the version the
// pod is built with (the State's TargetVersion); act computes nothing again.
func TestActionsCarryPodVersion(t *testing.T) {
	s := State{Size: 3, TargetVersion: "3.6.16"}
	d := Plan(s)
	if d.Action == nil || d.Action.Kind != ActionCreatePod {
		t.Fatalf("Plan(new cluster) = %+v, want the seed's pod created", d)
	}
	if d.Action.PodVersion != "3.6.16" {
		t.Errorf("CreatePod's PodVersion = %q, want the target version 3.6.16", d.Action.PodVersion)
	}
	s.Pods = plantest.Pods(plantest.Joining(1, true, 0, 1))
	if d := Plan(s); d.Action == nil || d.Action.Kind != ActionDeletePod || d.Action.PodVersion != "" {
		t.Errorf("Plan = %+v, want a DeletePod with no PodVersion", d.Action)
	}
}
