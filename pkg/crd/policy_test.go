package crd

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/etcd-operator/etcd-operator/deploy"
)

// policyClient is a fake clientset holding objects whose discovery serves the admission
// policy resources when served is true, and the rest of admissionregistration.k8s.io/v1 (as
// Kubernetes before 1.36 does) otherwise.
func policyClient(served bool, objects ...runtime.Object) *k8sfake.Clientset {
	client := k8sfake.NewClientset(objects...)
	resources := []metav1.APIResource{{Name: "validatingadmissionpolicies"}, {Name: "validatingadmissionpolicybindings"}}
	if served {
		resources = append(resources, metav1.APIResource{Name: "mutatingadmissionpolicies"}, metav1.APIResource{Name: "mutatingadmissionpolicybindings"})
	}
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: admissionregistrationv1.SchemeGroupVersion.String(), APIResources: resources},
	}
	return client
}

func desiredPolicy(t *testing.T) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	t.Helper()
	policy, binding, err := DecodePolicy(deploy.TLSDefaultPolicy)
	if err != nil {
		t.Fatalf("decoding the embedded policy: %v", err)
	}
	return policy, binding
}

// policyWrites lists the verbs and resources of the writes client received.
func policyWrites(client *k8sfake.Clientset) []string {
	var w []string
	for _, a := range client.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			w = append(w, v+" "+a.GetResource().Resource)
		}
	}
	return w
}

// stored reads the policy and binding client holds.
func stored(t *testing.T, client *k8sfake.Clientset) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	t.Helper()
	ctx := context.Background()
	p, err := client.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, TLSDefaultPolicyName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the policy: %v", err)
	}
	b, err := client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Get(ctx, TLSDefaultPolicyName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the binding: %v", err)
	}
	return p, b
}

// The policy and its binding are created when missing, and a second run writes nothing.
func TestEnsurePolicyCreatesThenLeavesAsIs(t *testing.T) {
	client := policyClient(true)
	if err := EnsurePolicy(context.Background(), client, deploy.TLSDefaultPolicy, testLogger()); err != nil {
		t.Fatalf("EnsurePolicy: %v", err)
	}
	want := []string{"create mutatingadmissionpolicies", "create mutatingadmissionpolicybindings"}
	if got := policyWrites(client); !slices.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	policy, binding := desiredPolicy(t)
	p, b := stored(t, client)
	if !equality.Semantic.DeepEqual(p.Spec, policy.Spec) || !equality.Semantic.DeepEqual(b.Spec, binding.Spec) {
		t.Errorf("stored policy or binding differs from the embedded YAML")
	}

	client.ClearActions()
	if err := EnsurePolicy(context.Background(), client, deploy.TLSDefaultPolicy, testLogger()); err != nil {
		t.Fatalf("EnsurePolicy (unchanged): %v", err)
	}
	if got := policyWrites(client); len(got) != 0 {
		t.Errorf("EnsurePolicy of an unchanged policy wrote %v", got)
	}
}

// A stored policy or binding that differs in spec, or lacks a label, is brought to the
// embedded YAML; labels of others are kept.
func TestEnsurePolicyUpdatesWhatDiffers(t *testing.T) {
	policy, binding := desiredPolicy(t)
	oldPolicy := policy.DeepCopy()
	ignore := admissionregistrationv1.Ignore
	oldPolicy.Spec.FailurePolicy = &ignore
	oldPolicy.Labels = map[string]string{"team": "platform"}
	oldBinding := binding.DeepCopy()
	oldBinding.Labels = nil
	oldBinding.Spec.PolicyName = "an-older-policy"
	client := policyClient(true, oldPolicy, oldBinding)

	if err := EnsurePolicy(context.Background(), client, deploy.TLSDefaultPolicy, testLogger()); err != nil {
		t.Fatalf("EnsurePolicy: %v", err)
	}
	want := []string{"update mutatingadmissionpolicies", "update mutatingadmissionpolicybindings"}
	if got := policyWrites(client); !slices.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	p, b := stored(t, client)
	if !equality.Semantic.DeepEqual(p.Spec, policy.Spec) {
		t.Errorf("policy spec after the update = %+v, want the embedded one", p.Spec)
	}
	if p.Labels["team"] != "platform" || p.Labels["app.kubernetes.io/name"] != "etcd-operator" {
		t.Errorf("policy labels %v, want team kept and app.kubernetes.io/name added", p.Labels)
	}
	if !equality.Semantic.DeepEqual(b.Spec, binding.Spec) {
		t.Errorf("binding spec after the update = %+v, want the embedded one", b.Spec)
	}
	if b.Labels["app.kubernetes.io/name"] != "etcd-operator" {
		t.Errorf("binding labels %v, want app.kubernetes.io/name added", b.Labels)
	}
}

// A conflict on update (another replica wrote first) is retried on a fresh read.
func TestEnsurePolicyRetriesConflicts(t *testing.T) {
	policy, binding := desiredPolicy(t)
	oldPolicy := policy.DeepCopy()
	oldPolicy.Spec.MatchConditions = nil
	client := policyClient(true, oldPolicy, binding)
	conflicts := 0
	client.PrependReactor("update", "mutatingadmissionpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts++; conflicts == 1 {
			return true, nil, apierrors.NewConflict(policyResource.GroupResource(), TLSDefaultPolicyName, errors.New("stale"))
		}
		return false, nil, nil
	})
	if err := EnsurePolicy(context.Background(), client, deploy.TLSDefaultPolicy, testLogger()); err != nil {
		t.Fatalf("EnsurePolicy: %v", err)
	}
	if p, _ := stored(t, client); conflicts != 2 || !equality.Semantic.DeepEqual(p.Spec, policy.Spec) {
		t.Errorf("after %d update attempts the stored spec equals the embedded one: %v; want 2 attempts and equal",
			conflicts, equality.Semantic.DeepEqual(p.Spec, policy.Spec))
	}
}

// An API server that does not serve the policy resources gets no write, and the caller a
// sentinel it can tell from a failure.
func TestEnsurePolicyNotServed(t *testing.T) {
	client := policyClient(false)
	err := EnsurePolicy(context.Background(), client, deploy.TLSDefaultPolicy, testLogger())
	if !errors.Is(err, ErrPolicyNotServed) {
		t.Errorf("EnsurePolicy = %v, want ErrPolicyNotServed", err)
	}
	if got := policyWrites(client); len(got) != 0 {
		t.Errorf("EnsurePolicy wrote %v to an API server without the resources", got)
	}

	// Discovery that fails is a failure, not a "not served".
	failing := policyClient(true)
	failing.Discovery().(*fakediscovery.FakeDiscovery).PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("discovery is down")
	})
	err = EnsurePolicy(context.Background(), failing, deploy.TLSDefaultPolicy, testLogger())
	if err == nil || errors.Is(err, ErrPolicyNotServed) {
		t.Errorf("EnsurePolicy with failing discovery = %v, want an error other than ErrPolicyNotServed", err)
	}
}

// TestTLSDefaultPolicyShape checks the embedded policy for what the API server does not: that
// it acts on EtcdCluster creates alone (later writes of an existing cluster never get a
// default, which is the point of using admission rather than a schema default), that it fails
// closed, and that every field the API server defaults is written out, so that the stored
// objects compare equal to the YAML and an unchanged operator writes nothing. The CEL is run
// against EtcdClusters in pkg/apis/etcd/v1alpha1 (crd_tls_default_test.go).
func TestTLSDefaultPolicyShape(t *testing.T) {
	policy, binding := desiredPolicy(t)
	if policy.Name != TLSDefaultPolicyName || binding.Name != TLSDefaultPolicyName || binding.Spec.PolicyName != TLSDefaultPolicyName {
		t.Errorf("policy %q, binding %q of %q: want all %q", policy.Name, binding.Name, binding.Spec.PolicyName, TLSDefaultPolicyName)
	}
	spec := policy.Spec
	if got := ptr.Deref(spec.FailurePolicy, ""); got != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy %q, want Fail: no cluster may start in plaintext because the policy did not run", got)
	}
	if spec.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("reinvocationPolicy %q, want Never", spec.ReinvocationPolicy)
	}
	if spec.ParamKind != nil || binding.Spec.ParamRef != nil || binding.Spec.MatchResources != nil {
		t.Errorf("paramKind %v, paramRef %v, binding matchResources %v: want none", spec.ParamKind, binding.Spec.ParamRef, binding.Spec.MatchResources)
	}
	m := spec.MatchConstraints
	if m == nil {
		t.Fatal("no matchConstraints")
	}
	if m.MatchPolicy == nil || m.NamespaceSelector == nil || m.ObjectSelector == nil || len(m.ExcludeResourceRules) != 0 {
		t.Errorf("matchConstraints %+v: want matchPolicy, namespaceSelector and objectSelector written out, no exclusions", m)
	}
	if len(m.ResourceRules) != 1 {
		t.Fatalf("%d resourceRules, want 1", len(m.ResourceRules))
	}
	r := m.ResourceRules[0]
	if !slices.Equal(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) {
		t.Errorf("operations %v, want CREATE alone: an update must never turn TLS on", r.Operations)
	}
	if !slices.Equal(r.APIGroups, []string{"etcd.operator.dev"}) || !slices.Equal(r.Resources, []string{"etcdclusters"}) ||
		!slices.Equal(r.APIVersions, []string{"v1alpha1"}) || len(r.ResourceNames) != 0 {
		t.Errorf("resource rule %+v, want etcdclusters.etcd.operator.dev/v1alpha1, every name", r)
	}
	if r.Scope == nil || *r.Scope != admissionregistrationv1.NamespacedScope {
		t.Errorf("scope %v, want Namespaced written out", r.Scope)
	}
	if len(spec.Mutations) != 1 || spec.Mutations[0].PatchType != admissionregistrationv1.PatchTypeJSONPatch || spec.Mutations[0].JSONPatch == nil {
		t.Errorf("mutations %+v, want one JSONPatch", spec.Mutations)
	}
}

func TestDecodePolicyRefusesOtherContent(t *testing.T) {
	docs := strings.Split(string(deploy.TLSDefaultPolicy), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("the embedded policy has %d documents, want 2", len(docs))
	}
	policyDoc, bindingDoc := docs[0], docs[1]
	for _, tc := range []struct{ name, yaml, want string }{
		{"policy alone", policyDoc, "want a MutatingAdmissionPolicy and its MutatingAdmissionPolicyBinding"},
		{"binding alone", bindingDoc, "want a MutatingAdmissionPolicy and its MutatingAdmissionPolicyBinding"},
		{"two policies", policyDoc + "\n---\n" + policyDoc + "\n---\n" + bindingDoc, "unexpected MutatingAdmissionPolicy"},
		{"unknown field", strings.Replace(policyDoc, "  failurePolicy: Fail", "  failurePolicy: Fail\n  failPolicy: Fail", 1) + "\n---\n" + bindingDoc, "unknown field"},
		{"beta API", strings.Replace(policyDoc, "admissionregistration.k8s.io/v1\n", "admissionregistration.k8s.io/v1beta1\n", 1) + "\n---\n" + bindingDoc, "want \"admissionregistration.k8s.io/v1\""},
		{"binding of another policy", policyDoc + "\n---\n" + strings.Replace(bindingDoc, "policyName: ", "policyName: other-", 1), "binds \"other-"},
		{"a CRD", string(deploy.EtcdClusterCRD), "want \"admissionregistration.k8s.io/v1\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := DecodePolicy([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodePolicy = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
