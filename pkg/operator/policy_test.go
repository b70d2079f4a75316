package operator

import (
	"bytes"
	"context"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/etcd-operator/etcd-operator/deploy"
	"github.com/etcd-operator/etcd-operator/pkg/crd"
)

// kubeServing is a fake clientset whose discovery lists the given admissionregistration.k8s.io/v1
// resources.
func kubeServing(resources ...string) *k8sfake.Clientset {
	kube := k8sfake.NewClientset()
	list := &metav1.APIResourceList{GroupVersion: admissionregistrationv1.SchemeGroupVersion.String()}
	for _, r := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r})
	}
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{list}
	return kube
}

// installPolicy installs the policy and its binding where the API server serves them; where
// it does not (Kubernetes before 1.36) it warns once and lets the operator start; with
// --skip-crd-install it asks the API server nothing.
func TestInstallPolicy(t *testing.T) {
	ctx := context.Background()

	kube := kubeServing("mutatingadmissionpolicies", "mutatingadmissionpolicybindings")
	if err := installPolicy(ctx, &Options{}, &clients{kube: kube}, tlsDefaultPolicy, quietLog()); err != nil {
		t.Fatalf("installPolicy: %v", err)
	}
	if _, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Get(ctx, crd.TLSDefaultPolicyName, metav1.GetOptions{}); err != nil {
		t.Errorf("the binding was not installed: %v", err)
	}

	old := kubeServing("validatingadmissionpolicies", "validatingadmissionpolicybindings")
	log, hook := logtest.NewNullLogger()
	if err := installPolicy(ctx, &Options{}, &clients{kube: old}, tlsDefaultPolicy, logrus.NewEntry(log)); err != nil {
		t.Fatalf("installPolicy on an API server without MutatingAdmissionPolicies: %v, want the operator to go on", err)
	}
	var warnings int
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings on an API server without MutatingAdmissionPolicies, want 1", warnings)
	}

	skipped := kubeServing("mutatingadmissionpolicies", "mutatingadmissionpolicybindings")
	if err := installPolicy(ctx, &Options{SkipCRDInstall: true}, &clients{kube: skipped}, tlsDefaultPolicy, quietLog()); err != nil {
		t.Fatalf("installPolicy with --skip-crd-install: %v", err)
	}
	if n := len(skipped.Actions()); n != 0 {
		t.Errorf("installPolicy with --skip-crd-install made %d requests, want none", n)
	}
}

// The operator installs the policy of deploy/crd.
func TestOperatorPolicy(t *testing.T) {
	if !bytes.Equal(tlsDefaultPolicy, deploy.TLSDefaultPolicy) {
		t.Error("the operator does not install deploy/crd/etcd.operator.dev_tls-default.yaml")
	}
}
