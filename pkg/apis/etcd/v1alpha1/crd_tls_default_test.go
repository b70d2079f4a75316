package v1alpha1_test

import (
	"context"
	"encoding/json"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/etcd-operator/etcd-operator/deploy"
	"github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/crd"
)

// tlsDefaulter runs the MutatingAdmissionPolicy of deploy/crd/etcd.operator.dev_tls-default.yaml
// with the API server's own admission code, offline, as its MutatingAdmissionPolicy plugin
// does (policy/mutating: compilePolicy, then the dispatcher): the policy's and the binding's
// match rules, the matchConditions, then each JSON patch, and the CRD's defaults applied to
// the patched object.
type tlsDefaulter struct {
	t          *testing.T
	policy     *admissionregistrationv1.MutatingAdmissionPolicy
	binding    *admissionregistrationv1.MutatingAdmissionPolicyBinding
	compiler   *plugincel.CompositedCompiler
	conditions matchconditions.Matcher
	patchers   []patch.Patcher
}

func newTLSDefaulter(t *testing.T) *tlsDefaulter {
	t.Helper()
	policy, binding, err := crd.DecodePolicy(deploy.TLSDefaultPolicy)
	if err != nil {
		t.Fatal(err)
	}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	// The API server refuses to store a policy whose expressions do not compile in the
	// NewExpressions environment; it evaluates stored ones in StoredExpressions.
	check := func(what string, a plugincel.ExpressionAccessor, o plugincel.OptionalVariableDeclarations) {
		if r := compiler.CompileCELExpression(a, o, environment.NewExpressions); r.Error != nil {
			t.Fatalf("the API server would refuse %s %q: %v", what, a.GetExpression(), r.Error)
		}
	}
	var accessors []plugincel.ExpressionAccessor
	for i := range policy.Spec.MatchConditions {
		mc := (*matchconditions.MatchCondition)(&policy.Spec.MatchConditions[i])
		check("matchCondition", mc, opts)
		accessors = append(accessors, mc)
	}
	d := &tlsDefaulter{t: t, policy: policy, binding: binding, compiler: compiler}
	d.conditions = matchconditions.NewMatcher(compiler.CompileCondition(accessors, opts, environment.StoredExpressions),
		policy.Spec.FailurePolicy, "policy", "validate", policy.Name)
	for _, m := range policy.Spec.Mutations {
		if m.PatchType != admissionregistrationv1.PatchTypeJSONPatch || m.JSONPatch == nil {
			t.Fatalf("mutation %+v: this test runs JSON patches only", m)
		}
		accessor := &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}
		check("jsonPatch", accessor, patchOpts)
		d.patchers = append(d.patchers, patch.NewJSONPatcher(compiler.CompileMutatingEvaluator(accessor, patchOpts, environment.StoredExpressions)))
	}
	return d
}

// admit runs the policy on a request for obj (old: the stored object of an update) to the
// resource (etcdclusters, etcdbackups) and subresource given, and returns the object the
// request goes on with, and whether the policy applied to it at all.
func (d *tlsDefaulter) admit(a *apiServer, op admission.Operation, resource, subresource string, obj, old *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	d.t.Helper()
	gvr := v1alpha1.SchemeGroupVersion.WithResource(resource)
	attrs := admission.NewAttributesRecord(obj, old, obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName(),
		gvr, subresource, op, nil, false, nil)
	o := admission.NewObjectInterfacesFromScheme(runtime.NewScheme())
	m := generic.NewPolicyMatcher(matching.NewMatcher(nil, nil))
	matches, matchedResource, matchedKind, err := m.DefinitionMatches(attrs, o, mutating.NewMutatingAdmissionPolicyAccessor(d.policy))
	if err != nil {
		d.t.Fatalf("matching the policy: %v", err)
	}
	if !matches {
		return obj, false
	}
	if matches, err = m.BindingMatches(attrs, o, mutating.NewMutatingAdmissionPolicyBindingAccessor(d.binding)); err != nil || !matches {
		d.t.Fatalf("the binding does not match a request the policy matches: %v", err)
	}
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: matchedKind, VersionedObject: obj, VersionedOldObject: old}
	ctx := d.compiler.CreateContext(context.Background())
	if r := d.conditions.Match(ctx, versioned, nil, nil); r.Error != nil {
		d.t.Fatalf("matchConditions failed, which refuses the request: %v", r.Error)
	} else if !r.Matches {
		return obj, false
	}
	for _, p := range d.patchers {
		out, err := p.Patch(ctx, patch.Request{MatchedResource: matchedResource, VersionedAttributes: versioned, ObjectInterfaces: o},
			celconfig.RuntimeCELCostBudget)
		if err != nil {
			d.t.Fatalf("the patch failed, which refuses the request: %v", err)
		}
		patched := out.(*unstructured.Unstructured)
		structuraldefaulting.Default(patched.Object, a.structural)
		versioned.VersionedObject = patched
	}
	return versioned.VersionedObject.(*unstructured.Unstructured), true
}

// jsonOf is v as JSON, or "" when it is not found.
func jsonOf(t *testing.T, v map[string]any, found bool) string {
	t.Helper()
	if !found {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tlsOf returns spec.tls of u, and whether it is there.
func tlsOf(u *unstructured.Unstructured) (map[string]any, bool) {
	tls, found, _ := unstructured.NestedMap(u.Object, "spec", "tls")
	return tls, found
}

// A cluster created without spec.tls gets spec.tls.peer: {} from the policy, and the result
// passes the CRD's validation; one created with any spec.tls keeps it as it is.
func TestTLSDefaultPolicyOnCreate(t *testing.T) {
	a, d := newAPIServer(t), newTLSDefaulter(t)
	for _, tc := range []struct {
		name, spec string
		wantTLS    string // spec.tls after admission as JSON, "" for none
		wantSize   int64
	}{
		{"no spec.tls", "  size: 5\n", `{"peer":{}}`, 5},
		{"no spec at all: the defaults fill in the rest", "", `{"peer":{}}`, 3},
		{"empty spec", "  {}\n", `{"peer":{}}`, 3},
		{"spec.tls null", "  tls: null\n", `{"peer":{}}`, 3},
		{"spec.tls {} (plaintext)", "  tls: {}\n", `{}`, 3},
		{"client TLS only", "  tls: {client: {}}\n", `{"client":{}}`, 3},
		{"lifetimes only", "  tls: {leafLifetime: 720h}\n", `{"leafLifetime":"720h"}`, 3},
		{"peer from a Secret", "  tls: {peer: {secretName: peer-tls}}\n", `{"peer":{"secretName":"peer-tls"}}`, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := a.decode(etcdCluster(tc.spec, ""))
			got, _ := d.admit(a, admission.Create, "etcdclusters", "", obj, nil)
			tls, found := tlsOf(got)
			if gotTLS := jsonOf(t, tls, found); gotTLS != tc.wantTLS {
				t.Errorf("spec.tls after admission = %s, want %s", gotTLS, tc.wantTLS)
			}
			if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != tc.wantSize {
				t.Errorf("spec.size after admission = %d, want %d", size, tc.wantSize)
			}
			a.main.PrepareForCreate(context.Background(), got)
			checkErrors(t, a.main.Validate(context.Background(), got), "")
		})
	}
}

// Only creates of EtcdClusters get the default: an update of a cluster created without
// spec.tls (before the policy existed), through the main resource or its status, and any
// other kind, pass as they are.
func TestTLSDefaultPolicyLeavesOtherRequests(t *testing.T) {
	a, d := newAPIServer(t), newTLSDefaulter(t)
	old := a.decode(etcdCluster("  size: 3\n", ""))
	backup := a.decode(etcdCluster("  size: 3\n", ""))
	backup.SetKind("EtcdBackup")
	for _, tc := range []struct {
		name                  string
		op                    admission.Operation
		resource, subresource string
		obj                   *unstructured.Unstructured
	}{
		{"update (kubectl annotate)", admission.Update, "etcdclusters", "", a.decode(etcdCluster("  size: 3\n", ""))},
		{"update of the spec", admission.Update, "etcdclusters", "", a.decode(etcdCluster("  size: 5\n", ""))},
		{"status update", admission.Update, "etcdclusters", "status", a.decode(etcdCluster("  size: 3\n", "  size: 3\n"))},
		{"scale", admission.Update, "etcdclusters", "scale", a.decode(etcdCluster("  size: 5\n", ""))},
		{"create of an EtcdBackup", admission.Create, "etcdbackups", "", backup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stored *unstructured.Unstructured
			if tc.op == admission.Update {
				stored = old
			}
			got, applied := d.admit(a, tc.op, tc.resource, tc.subresource, tc.obj, stored)
			if tls, found := tlsOf(got); applied || found {
				t.Errorf("the policy applied: %v, spec.tls %s; want neither", applied, jsonOf(t, tls, found))
			}
		})
	}
}
