//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/deploy"
	"github.com/etcd-operator/etcd-operator/pkg/crd"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// policyActiveTimeout bounds the wait for an admission policy just written to act: the API
// server's policy informer picks it up, and for a CRD created just before, its schema is
// fetched for the policy's type converter (polled every 5 s; requests get 503 meanwhile).
const policyActiveTimeout = time.Minute

// specTLS reads spec.tls of the object that kubectl prints as JSON in out: "" when it has none.
func specTLS(t *testing.T, out string) string {
	t.Helper()
	var obj struct {
		Spec struct {
			TLS json.RawMessage `json:"tls"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	if len(obj.Spec.TLS) == 0 {
		return ""
	}
	// kubectl indents its JSON; compacted, it compares with the literals the tests expect.
	var compact bytes.Buffer
	if err := json.Compact(&compact, obj.Spec.TLS); err != nil {
		t.Fatalf("compacting spec.tls %s: %v", obj.Spec.TLS, err)
	}
	return compact.String()
}

// waitDefaulting waits until a server-side dry run of creating manifest (an EtcdCluster without
// spec.tls) comes back with spec.tls: the admission policy acts on new clusters.
func waitDefaulting(t *testing.T, f *framework.Framework, manifest string) {
	t.Helper()
	path := writeTemp(t, manifest)
	f.Eventually("the admission policy to default spec.tls", policyActiveTimeout, func() (bool, error) {
		out, err := f.NS("create", "--dry-run=server", "-o", "json", "-f", path)
		if err != nil {
			return false, err
		}
		tls := specTLS(t, out)
		return tls != "", fmt.Errorf("spec.tls of a new cluster is %q", tls)
	})
}

// TestNewClustersGetPeerTLS: with deploy/crd/ applied as an admin does, a cluster created
// without spec.tls is stored with spec.tls.peer: {}; one created with spec.tls keeps it as
// given (spec.tls: {} is plaintext). The clusters are paused: only their specs matter here.
func TestNewClustersGetPeerTLS(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	// The admin's install command: the CRDs and the policy. The operator has applied the same.
	f.MustKubectl("apply", "-f", "../../deploy/crd/")
	f.MustKubectl("wait", "--for=condition=Established", "crd/etcdclusters.etcd.operator.dev", "--timeout=60s")
	waitDefaulting(t, f, cluster("probe", "  paused: true\n"))

	for _, tc := range []struct{ name, spec, want string }{
		{"defaulted", "  paused: true\n", `{"peer":{}}`},
		{"plaintext", "  paused: true\n  tls: {}\n", `{}`},
		{"client-only", "  paused: true\n  tls: {client: {}}\n", `{"client":{}}`},
	} {
		f.Apply(cluster(tc.name, tc.spec))
		if got := specTLS(t, f.MustNS("get", "etcdcluster", tc.name, "-o", "json")); got != tc.want {
			t.Errorf("cluster %s: kubectl get shows spec.tls %s, want %s", tc.name, got, tc.want)
		}
	}
	// An update does not run the policy, and the CRD keeps spec.tls as it was created.
	f.MustNS("annotate", "etcdcluster", "plaintext", "example.com/touched=yes")
	if got := specTLS(t, f.MustNS("get", "etcdcluster", "plaintext", "-o", "json")); got != `{}` {
		t.Errorf("cluster plaintext after kubectl annotate: spec.tls %s, want {}", got)
	}
	f.Delete("etcdcluster/defaulted", "etcdcluster/plaintext", "etcdcluster/client-only")
}

// e2eTLSGroup is the throwaway API group of TestExistingClustersKeepNoTLS: a copy of the
// EtcdCluster CRD and of the admission policy live there, so that the policy can be added
// after a cluster exists, as on an operator upgrade, without touching the real policy that
// other tests run under.
const e2eTLSGroup = "e2e-tls-default.etcd.operator.dev"

// e2eTLSKind and e2eTLSPlural name the EtcdCluster copy in e2eTLSGroup.
const (
	e2eTLSKind   = "TLSDefaultProbe"
	e2eTLSPlural = "tlsdefaultprobes"
)

// TestExistingClustersKeepNoTLS: a cluster created before the policy existed (as by an
// operator before this one) keeps having no spec.tls through kubectl annotate and apply once
// the policy is in force, while a cluster created then gets it. The policy is written by
// crd.EnsurePolicy, as the operator writes it, and a second EnsurePolicy writes nothing: the
// objects the API server stores compare equal to the YAML.
func TestExistingClustersKeepNoTLS(t *testing.T) {
	f := framework.New(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatalf("loading KUBECONFIG: %v", err)
	}
	ext, err := apiextensionsclientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)

	// The CRD and the policy, moved to the throwaway group.
	copyCRD, err := crd.Decode(deploy.EtcdClusterCRD)
	if err != nil {
		t.Fatal(err)
	}
	copyCRD.Spec.Group = e2eTLSGroup
	// A kind and plural of its own: kubectl resolves "etcdcluster" by name alone, and a second
	// etcdclusters resource, even gone, would stay in its discovery cache and take the other
	// tests' kubectl commands.
	copyCRD.Spec.Names.Kind, copyCRD.Spec.Names.ListKind = e2eTLSKind, e2eTLSKind+"List"
	copyCRD.Spec.Names.Plural, copyCRD.Spec.Names.Singular = e2eTLSPlural, strings.ToLower(e2eTLSKind)
	copyCRD.Name = copyCRD.Spec.Names.Plural + "." + e2eTLSGroup
	copyCRD.Spec.Names.ShortNames = nil
	copyCRD.Spec.Names.Categories = nil
	policy, binding, err := crd.DecodePolicy(deploy.TLSDefaultPolicy)
	if err != nil {
		t.Fatal(err)
	}
	policy.Name, binding.Name, binding.Spec.PolicyName = "e2e-tls-default", "e2e-tls-default", "e2e-tls-default"
	policy.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{e2eTLSGroup}
	policy.Spec.MatchConstraints.ResourceRules[0].Resources = []string{e2eTLSPlural}
	var policyYAML []byte
	for _, o := range []any{policy, binding} {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		policyYAML = append(append(policyYAML, b...), "---\n"...)
	}
	crdYAML, err := yaml.Marshal(copyCRD)
	if err != nil {
		t.Fatal(err)
	}

	policies := kube.AdmissionregistrationV1().MutatingAdmissionPolicies()
	bindings := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	crds := ext.ApiextensionsV1().CustomResourceDefinitions()
	removeAll := func(ctx context.Context) error {
		var errs []error
		for _, del := range []func() error{
			func() error { return bindings.Delete(ctx, binding.Name, metav1.DeleteOptions{}) },
			func() error { return policies.Delete(ctx, policy.Name, metav1.DeleteOptions{}) },
			func() error { return crds.Delete(ctx, copyCRD.Name, metav1.DeleteOptions{}) },
		} {
			if err := del(); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	t.Cleanup(func() {
		if err := removeAll(context.Background()); err != nil {
			t.Logf("removing the throwaway CRD and policy: %v", err)
		}
	})
	// Leftovers of an interrupted run would put the policy in force too early.
	if err := removeAll(ctx); err != nil {
		t.Fatalf("removing leftovers: %v", err)
	}
	if err := framework.Poll(time.Minute, func() (bool, error) {
		_, err := crds.Get(ctx, copyCRD.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	}); err != nil {
		t.Fatalf("waiting for a leftover CRD %s to go: %v", copyCRD.Name, err)
	}
	if err := crd.Ensure(ctx, ext, crdYAML, log); err != nil {
		t.Fatalf("creating the throwaway CRD: %v", err)
	}

	resource := e2eTLSPlural + "." + e2eTLSGroup
	manifest := func(name, spec string) string {
		m := strings.Replace(cluster(name, spec), "etcd.operator.dev/v1alpha1", e2eTLSGroup+"/v1alpha1", 1)
		return strings.Replace(m, "kind: EtcdCluster", "kind: "+e2eTLSKind, 1)
	}
	getTLS := func(name string) string {
		t.Helper()
		return specTLS(t, f.MustNS("get", resource, name, "-o", "json"))
	}
	// kubectl's discovery may not list the new CRD at once.
	f.Eventually("creating a cluster in the throwaway group", time.Minute, func() (bool, error) {
		_, err := f.KubectlStdin(manifest("legacy", "  paused: true\n"), "-n", f.Namespace, "apply", "-f", "-")
		return err == nil, err
	})
	if got := getTLS("legacy"); got != "" {
		t.Fatalf("cluster created before the policy has spec.tls %s, want none", got)
	}

	if err := crd.EnsurePolicy(ctx, kube, policyYAML, log); err != nil {
		t.Fatalf("EnsurePolicy: %v", err)
	}
	waitDefaulting(t, f, manifest("probe", "  paused: true\n"))

	f.MustNS("annotate", resource, "legacy", "example.com/touched=yes")
	if got := getTLS("legacy"); got != "" {
		t.Errorf("after kubectl annotate the cluster created before the policy has spec.tls %s, want none", got)
	}
	f.Apply(manifest("legacy", "  paused: true\n  size: 5\n"))
	if got := getTLS("legacy"); got != "" {
		t.Errorf("after kubectl apply of a new size the cluster created before the policy has spec.tls %s, want none", got)
	}
	f.Apply(manifest("created-after", "  paused: true\n"))
	if got := getTLS("created-after"); got != `{"peer":{}}` {
		t.Errorf("cluster created under the policy has spec.tls %s, want {\"peer\":{}}", got)
	}

	before := resourceVersions(ctx, t, kube, policy.Name)
	if err := crd.EnsurePolicy(ctx, kube, policyYAML, log); err != nil {
		t.Fatalf("EnsurePolicy (unchanged): %v", err)
	}
	if after := resourceVersions(ctx, t, kube, policy.Name); after != before {
		t.Errorf("EnsurePolicy of an unchanged policy wrote it: resourceVersions %s -> %s", before, after)
	}
	f.Delete(resource+"/legacy", resource+"/created-after")
}

// resourceVersions returns the resourceVersions of the policy name and of its binding of the
// same name.
func resourceVersions(ctx context.Context, t *testing.T, kube kubernetes.Interface, name string) string {
	t.Helper()
	p, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.ResourceVersion + "/" + b.ResourceVersion
}
