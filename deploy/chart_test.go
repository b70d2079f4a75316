package deploy

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// releaseName is the release the chart is rendered as: the name that gives its objects
// deploy/'s names.
const releaseName = "etcd-operator"

// chartLabels are the labels the chart adds to deploy/'s, with the value each must have:
// Helm's recommended ones, and the release in the selectors, so that two releases never select
// each other's pods.
var chartLabels = map[string]string{
	"app.kubernetes.io/instance":   releaseName,
	"app.kubernetes.io/managed-by": "Helm",
	"app.kubernetes.io/version":    "dev",
	"helm.sh/chart":                "",
}

// stripChartLabels removes chartLabels from every label map of v (a map that holds
// app.kubernetes.io/name: metadata labels, selectors, the pod template's labels) and
// returns the problems found: a label map that lacks one of them or gives it another value.
func stripChartLabels(v any, path string) []string {
	var problems []string
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["app.kubernetes.io/name"]; ok {
			for k, want := range chartLabels {
				got, ok := v[k]
				isSelector := strings.HasSuffix(path, ".selector") || strings.HasSuffix(path, ".matchLabels")
				switch {
				case isSelector && k != "app.kubernetes.io/instance":
					if ok {
						problems = append(problems, fmt.Sprintf("%s selects on %s", path, k))
					}
					continue
				case !ok:
					problems = append(problems, fmt.Sprintf("%s lacks the label %s", path, k))
				case want != "" && got != want:
					problems = append(problems, fmt.Sprintf("%s: label %s=%v, want %s", path, k, got, want))
				}
				delete(v, k)
			}
		}
		for k, e := range v {
			problems = append(problems, stripChartLabels(e, path+"."+k)...)
		}
	case []any:
		for i, e := range v {
			problems = append(problems, stripChartLabels(e, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return problems
}

// diff lists the paths where a and b differ.
func diff(a, b any, path string) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			out = append(out, diff(am[k], bm[k], path+"."+k)...)
		}
		return out
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		var out []string
		for i := range as {
			out = append(out, diff(as[i], bs[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	}
	if !reflect.DeepEqual(a, b) {
		return []string{fmt.Sprintf("%s: kustomize %v, chart %v", path, a, b)}
	}
	return nil
}

// The objects of deploy/ that the chart does not render: the Namespace (helm install
// --create-namespace, or the admin's), and the CRDs and the admission policy, which the
// operator creates and upgrades itself (the chart's README, "CRDs").
var notInChart = []string{"Namespace", "CustomResourceDefinition", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}

// chartVariants are the chart's two scopes, each beside the kustomization that installs the
// same operator.
var chartVariants = []struct {
	name, kustomization, namespace string
	sets                           []string
}{
	{"cluster-wide", ".", "etcd-operator-system", nil},
	{"namespaced", "namespaced", "etcd", []string{"namespaced=true"}},
}

// TestChartRendersTheSameOperator renders the chart with its default values, cluster-wide and
// namespaced, beside deploy/ and deploy/namespaced/, and compares every object the chart
// renders with the kustomization's, field by field: the Deployment (image, args, env,
// securityContext, probes, ports, resources), the ServiceAccount, the RBAC rules and
// bindings, the metrics Service. The one difference allowed is the chart's labels
// (chartLabels): Helm's on every object, the release's in the selectors.
func TestChartRendersTheSameOperator(t *testing.T) {
	for _, v := range chartVariants {
		t.Run(v.name, func(t *testing.T) {
			kust := renderKustomization(t, v.kustomization)
			chart := renderChart(t, v.namespace, v.sets)
			for _, k := range kust.keys() {
				o := kust[k]
				if slices.Contains(notInChart, o.Kind) {
					continue
				}
				c, ok := chart[k]
				if !ok {
					t.Errorf("the chart does not render %s (it renders %v)", k, chart.keys())
					continue
				}
				for _, p := range stripChartLabels(c.Body, k) {
					t.Error(p)
				}
				for _, d := range diff(o.Body, c.Body, k) {
					t.Error(d)
				}
			}
			for _, k := range chart.keys() {
				if _, ok := kust[k]; !ok {
					t.Errorf("the chart renders %s, which deploy/%s does not install", k, v.kustomization)
				}
			}
		})
	}
}

// chartRules are the RBAC rules the chart renders for the operator's service account:
// every Role's and ClusterRole's, in the order rendered.
func chartRules(t *testing.T, r rendered) []rbacv1.PolicyRule {
	t.Helper()
	var rules []rbacv1.PolicyRule
	for _, k := range r.keys() {
		o := r[k]
		switch o.Kind {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			o.decodeInto(t, &cr)
			rules = append(rules, cr.Rules...)
		case "Role":
			var role rbacv1.Role
			o.decodeInto(t, &role)
			rules = append(rules, role.Rules...)
		}
	}
	return rules
}

// clusterScoped reports whether p is on the CRDs or the admission policy, which the operator
// touches only when it manages them.
func clusterScoped(p permission) bool {
	return p.group == "apiextensions.k8s.io" || p.group == "admissionregistration.k8s.io"
}

// TestChartRBACGrantsExactlyWhatTheCodeCalls extends TestRBACGrantsExactlyWhatTheCodeCalls to
// the chart's rendered RBAC, in each of its shapes: cluster-wide, it grants exactly what the
// operator's code calls; without the CRDs to manage (namespaced, or crds.managedByOperator
// false) and without leader election, exactly that minus what those need.
func TestChartRBACGrantsExactlyWhatTheCodeCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module with go list -export")
	}
	renderer(t)
	used := usedPermissions(t, func(pkg string) bool { return !isPlugin(pkg) })
	without := func(drop func(permission) bool) map[permission]string {
		m := map[permission]string{}
		for p, where := range used {
			if !drop(p) {
				m[p] = where
			}
		}
		return m
	}
	for _, tc := range []struct {
		name, namespace string
		sets            []string
		used            map[permission]string
	}{
		{"cluster-wide", "etcd-operator-system", nil, used},
		{"namespaced", "etcd", []string{"namespaced=true"}, without(clusterScoped)},
		{"CRDs managed by an admin", "etcd-operator-system", []string{"crds.managedByOperator=false"}, without(clusterScoped)},
		// The Lease of each cluster stays: only the leader election's own Role goes.
		{"no leader election", "etcd-operator-system", []string{"leaderElection.enabled=false"}, used},
		{"namespaced, no leader election", "etcd", []string{"namespaced=true", "leaderElection.enabled=false"}, without(clusterScoped)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderChart(t, tc.namespace, tc.sets)
			checkGrants(t, tc.used, chartRules(t, r), "charts/etcd-operator ("+tc.name+")")
			for _, k := range r.keys() {
				if o := r[k]; (o.Kind == "Role" || o.Kind == "RoleBinding") && o.Namespace != tc.namespace {
					t.Errorf("%s is outside the release's namespace %s", k, tc.namespace)
				}
			}
			if strings.HasPrefix(tc.name, "namespaced") {
				for _, k := range r.keys() {
					if kind := r[k].Kind; kind == "ClusterRole" || kind == "ClusterRoleBinding" {
						t.Errorf("a namespaced release renders %s", k)
					}
				}
			}
			if strings.Contains(tc.name, "no leader election") {
				for _, k := range r.keys() {
					if strings.Contains(k, "leader-election") {
						t.Errorf("without leader election the chart still renders %s", k)
					}
				}
			}
		})
	}
}
