//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// claimsFinalizer is the finalizer a cluster carries while whenDeleted is Delete
// (api.FinalizerClaims).
const claimsFinalizer = "etcd.operator.dev/claims"

// waitClaimsFinalizer waits until the cluster carries the claims finalizer (present) or not:
// whenDeleted Delete takes effect once the operator has added it.
func waitClaimsFinalizer(f *framework.Framework, name string, present bool) {
	f.T().Helper()
	f.Eventually(fmt.Sprintf("finalizer %s on %s: %v", claimsFinalizer, name, present), time.Minute, func() (bool, error) {
		out, err := f.NS("get", "etcdcluster", name, "-o", "jsonpath={.metadata.finalizers}")
		if err != nil {
			return false, err
		}
		return strings.Contains(out, claimsFinalizer) == present, fmt.Errorf("finalizers %s", out)
	})
}

// claimMarks are the member-ID marks of the cluster's claims, by claim name, once every one
// of its n claims is marked.
func claimMarks(f *framework.Framework, name string, n int) map[string]string {
	f.T().Helper()
	var marks map[string]string
	f.Eventually("the claims of "+name+" marked with their members", 2*time.Minute, func() (bool, error) {
		marks = fieldByName(f, "pvc", name, `.metadata.annotations.etcd\.operator\.dev/member-id`)
		for _, m := range marks {
			if m == "" {
				return false, fmt.Errorf("marks %v", marks)
			}
		}
		return len(marks) == n, fmt.Errorf("marks %v", marks)
	})
	return marks
}

// stopOperator scales the operator's Deployment to zero and waits until no operator pod is
// left; it returns the function that brings it back and waits for it to be rolled out, which
// also runs at cleanup if the test did not call it.
func stopOperator(f *framework.Framework) (start func()) {
	f.T().Helper()
	deploy := []string{"-n", framework.OperatorNamespace}
	replicas := strings.TrimSpace(f.MustKubectl(append(deploy, "get", "deployment", "etcd-operator", "-o", "jsonpath={.spec.replicas}")...))
	started := false
	start = func() {
		if started {
			return
		}
		started = true
		f.MustKubectl(append(deploy, "scale", "deployment", "etcd-operator", "--replicas="+replicas)...)
		f.MustKubectl(append(deploy, "rollout", "status", "deployment", "etcd-operator", "--timeout=3m")...)
	}
	f.T().Cleanup(start)
	f.MustKubectl(append(deploy, "scale", "deployment", "etcd-operator", "--replicas=0")...)
	f.Eventually("no operator pod left", 2*time.Minute, func() (bool, error) {
		out, err := f.Kubectl(append(deploy, "get", "pods", "-l", "app.kubernetes.io/name=etcd-operator", "-o", "name")...)
		return err == nil && strings.TrimSpace(out) == "", fmt.Errorf("operator pods %q, %v", out, err)
	})
	return start
}

// TestRetainHoldsWhileTheOperatorIsDown: whenDeleted is read when the cluster is deleted, not
// when the operator last ran. Two clusters start under Delete; with the operator stopped, one
// is switched to Retain and both are deleted. Both wait, Terminating, for the operator. Once
// it is back, the one switched to Retain goes and leaves every claim with its member's mark;
// the other goes with its claims.
//
// Not parallel: it stops the one operator every other test relies on (as the node tests stop
// nodes), so it runs before the parallel tests start.
func TestRetainHoldsWhileTheOperatorIsDown(t *testing.T) {
	f := framework.New(t)
	requireOperator(t, f)
	const keep, drop = "keep", "drop"
	f.Apply(cluster(keep, "  size: 3\n  storage: {retentionPolicy: {whenDeleted: Delete}}\n"))
	f.Apply(cluster(drop, "  size: 1\n  storage: {retentionPolicy: {whenDeleted: Delete}}\n"))
	f.WaitClusterInSpec(keep, 3, 3*time.Minute)
	f.WaitClusterInSpec(drop, 1, 3*time.Minute)
	f.MustNS("wait", "etcdcluster/"+keep, "--for=condition=Available", "--timeout=60s")
	waitClaimsFinalizer(f, keep, true)
	waitClaimsFinalizer(f, drop, true)
	marks := claimMarks(f, keep, 3)
	uids := claimUIDs(f, keep)
	if owners := fieldByName(f, "pvc", keep, ".metadata.ownerReferences[*].kind"); len(owners) != 3 || strings.Join(valuesOf(owners), "") != "" {
		t.Errorf("claims' owners %v under Delete: want none (the finalizer, not ownership, deletes them)", owners)
	}

	start := stopOperator(f)
	f.Patch("etcdcluster/"+keep, `{"spec":{"storage":{"retentionPolicy":{"whenDeleted":"Retain"}}}}`)
	f.Delete("etcdcluster/"+keep, "etcdcluster/"+drop)
	for _, name := range []string{keep, drop} {
		f.Eventually(name+" marked deleted", time.Minute, func() (bool, error) {
			out, err := f.NS("get", "etcdcluster", name, "-o", "jsonpath={.metadata.deletionTimestamp}")
			return err == nil && strings.TrimSpace(out) != "", fmt.Errorf("deletionTimestamp %q, %v", out, err)
		})
		waitClaimsFinalizer(f, name, true)
	}
	if got := claimUIDs(f, drop); len(got) != 1 {
		t.Errorf("claims of %s with the operator down: %v, want its one claim still there", drop, got)
	}
	start()

	for _, name := range []string{keep, drop} {
		f.Eventually(name+" and its pods gone", 3*time.Minute, func() (bool, error) {
			out, err := f.NS("get", "pods", "-l", "etcd.operator.dev/cluster="+name, "-o", "name")
			if err != nil {
				return false, err
			}
			left, err := f.NS("get", "etcdcluster", name, "--ignore-not-found", "-o", "name")
			if err != nil {
				return false, err
			}
			out = strings.TrimSpace(out + left)
			return out == "", fmt.Errorf("still there: %s", strings.Join(strings.Fields(out), " "))
		})
	}
	if got := claimUIDs(f, keep); !maps.Equal(got, uids) {
		t.Errorf("claims of %s after its deletion under Retain: %v, want the same claims %v", keep, got, uids)
	}
	if got := fieldByName(f, "pvc", keep, `.metadata.annotations.etcd\.operator\.dev/member-id`); !maps.Equal(got, marks) {
		t.Errorf("member marks of the kept claims %v, want %v", got, marks)
	}
	if got := fieldByName(f, "pvc", keep, ".metadata.deletionTimestamp"); strings.Join(valuesOf(got), "") != "" {
		t.Errorf("kept claims being deleted: %v", got)
	}
	f.Eventually("the claim of "+drop+" gone with it (whenDeleted Delete)", 2*time.Minute, func() (bool, error) {
		left := claimUIDs(f, drop)
		return len(left) == 0, fmt.Errorf("claims left: %v", left)
	})
	if out := f.MustNS("get", "events", "--field-selector", "reason=ClaimsRetained", "-o", "name"); strings.TrimSpace(out) == "" {
		t.Error("no ClaimsRetained event")
	}
}

// valuesOf are the map's values, in no order.
func valuesOf(m map[string]string) []string { return slices.Collect(maps.Values(m)) }
