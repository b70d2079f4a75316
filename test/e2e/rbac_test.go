//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestRBACInstalledIsLeastPrivilege asks the API server what the installed operator's
// service account may do in a test namespace: what its code calls is allowed, what it never
// calls is not (deploy/rbac_test.go checks the manifests against the code offline).
func TestRBACInstalledIsLeastPrivilege(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	as := "--as=system:serviceaccount:" + framework.OperatorNamespace + ":etcd-operator"
	for _, tc := range []struct {
		verb, resource, subresource string
		want                        string
	}{
		{"create", "pods", "", "yes"},
		{"patch", "pods", "", "yes"},
		{"delete", "pods", "", "yes"},
		{"watch", "pods", "", "yes"},
		// A rollout's restart of a serving member is an eviction, within the budget.
		{"create", "pods", "eviction", "yes"},
		{"delete", "persistentvolumeclaims", "", "yes"},
		// patch: the cluster's Services, budget and policy are kept by server-side apply.
		{"patch", "services", "", "yes"},
		// delete: the Service of a member no longer wanted (scaled down).
		{"delete", "services", "", "yes"},
		{"patch", "poddisruptionbudgets.policy", "", "yes"},
		// create: a server-side apply that makes the object is authorized as a create.
		{"create", "services", "", "yes"},
		{"create", "poddisruptionbudgets.policy", "", "yes"},
		{"patch", "etcdclusters.etcd.operator.dev", "", "yes"},
		{"update", "etcdclusters.etcd.operator.dev", "status", "yes"},
		{"list", "events", "", "yes"},
		{"delete", "networkpolicies.networking.k8s.io", "", "yes"},
		// get: a member pod, claim or Service the label-filtered caches cannot show.
		{"get", "pods", "", "yes"},
		{"create", "leases.coordination.k8s.io", "", "yes"},
		// The certificates of clusters with spec.tls: made, renewed, and a user's Secret read.
		{"get", "secrets", "", "yes"},
		{"update", "secrets", "", "yes"},

		{"delete", "leases.coordination.k8s.io", "", "no"},
		{"update", "services", "", "no"},
		{"patch", "etcdclusters.etcd.operator.dev", "status", "no"},
		{"update", "etcdclusters.etcd.operator.dev", "", "no"},
		{"delete", "etcdclusters.etcd.operator.dev", "", "no"},
		{"delete", "poddisruptionbudgets.policy", "", "no"},
		{"create", "events.events.k8s.io", "", "no"},
		{"delete", "secrets", "", "no"},
		{"patch", "secrets", "", "no"},
		{"create", "pods", "exec", "no"},
	} {
		args := []string{"auth", "can-i", tc.verb, tc.resource, "-n", f.Namespace, as}
		if tc.subresource != "" {
			args = append(args, "--subresource="+tc.subresource)
		}
		// can-i exits non-zero for "no": the answer is in the output either way.
		out, _ := f.Kubectl(args...)
		if got := strings.TrimSpace(out); !strings.HasPrefix(got, tc.want) {
			t.Errorf("can the operator %s %s %s? %q, want %s", tc.verb, tc.resource, tc.subresource, got, tc.want)
		}
	}
}
