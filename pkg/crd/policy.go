package crd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

// TLSDefaultPolicyName names the MutatingAdmissionPolicy that gives an EtcdCluster created
// without spec.tls peer TLS, and its binding (deploy/crd/etcd.operator.dev_tls-default.yaml).
const TLSDefaultPolicyName = "etcd.operator.dev-default-peer-tls"

// ErrPolicyNotServed is returned (wrapped) by EnsurePolicy when the API server does not serve
// MutatingAdmissionPolicies and their bindings in admissionregistration.k8s.io/v1 (Kubernetes
// before 1.36, or the API turned off). Nothing then defaults spec.tls.
var ErrPolicyNotServed = errors.New("the API server does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicies")

// The resources EnsurePolicy writes, which the API server must serve.
var (
	policyResource  = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies")
	bindingResource = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicybindings")
)

// EnsurePolicy makes the cluster hold the MutatingAdmissionPolicy and its binding given as
// two YAML documents in policyYAML: each is created when it is missing, updated when its spec
// differs (labels and annotations of policyYAML are added, others are kept), and left
// untouched otherwise, the policy before its binding. It returns ErrPolicyNotServed without
// writing anything when the API server does not serve the two resources; an error when
// policyYAML does not hold exactly a policy and its binding, or when a write fails for a
// reason other than a conflict (conflicts are retried on a fresh read), or when ctx or
// Timeout expires first.
//
// There is no revision guard as for CRDs: while two operator versions run, the leader that
// starts last writes its policy, which is the one that matches the operator left running.
func EnsurePolicy(ctx context.Context, client kubernetes.Interface, policyYAML []byte, log logrus.FieldLogger) error {
	policy, binding, err := DecodePolicy(policyYAML)
	if err != nil {
		return err
	}
	for _, r := range []schema.GroupVersionResource{policyResource, bindingResource} {
		served, err := discovery.IsResourceEnabled(client.Discovery(), r)
		if err != nil {
			return fmt.Errorf("asking the API server whether it serves %s: %w", r.Resource, err)
		}
		if !served {
			return fmt.Errorf("%w (no %s)", ErrPolicyNotServed, r.Resource)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()

	policies := client.AdmissionregistrationV1().MutatingAdmissionPolicies()
	if err := ensureObject(ctx, policy, policies.Get, policies.Create, policies.Update, mergePolicy,
		log.WithFields(logrus.Fields{"kind": "MutatingAdmissionPolicy", "name": policy.Name})); err != nil {
		return err
	}
	bindings := client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	return ensureObject(ctx, binding, bindings.Get, bindings.Create, bindings.Update, mergeBinding,
		log.WithFields(logrus.Fields{"kind": "MutatingAdmissionPolicyBinding", "name": binding.Name}))
}

// DecodePolicy parses the YAML documents of policyYAML, rejecting unknown fields: exactly one
// MutatingAdmissionPolicy and one MutatingAdmissionPolicyBinding of it, both of
// admissionregistration.k8s.io/v1.
func DecodePolicy(policyYAML []byte) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, error) {
	var (
		policy  *admissionregistrationv1.MutatingAdmissionPolicy
		binding *admissionregistrationv1.MutatingAdmissionPolicyBinding
	)
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(policyYAML)))
	for {
		doc, err := docs.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("decoding the admission policy: %w", err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("decoding the admission policy: %w", err)
		}
		if meta.APIVersion == "" && meta.Kind == "" {
			continue // a document holding only comments
		}
		if meta.GroupVersionKind().GroupVersion() != admissionregistrationv1.SchemeGroupVersion {
			return nil, nil, fmt.Errorf("decoding the admission policy: apiVersion %q, want %q", meta.APIVersion, admissionregistrationv1.SchemeGroupVersion)
		}
		var into any
		switch {
		case meta.Kind == "MutatingAdmissionPolicy" && policy == nil:
			policy = &admissionregistrationv1.MutatingAdmissionPolicy{}
			into = policy
		case meta.Kind == "MutatingAdmissionPolicyBinding" && binding == nil:
			binding = &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
			into = binding
		default:
			return nil, nil, fmt.Errorf("decoding the admission policy: unexpected %s", meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			return nil, nil, fmt.Errorf("decoding the admission policy's %s: %w", meta.Kind, err)
		}
	}
	switch {
	case policy == nil || binding == nil:
		return nil, nil, errors.New("decoding the admission policy: want a MutatingAdmissionPolicy and its MutatingAdmissionPolicyBinding")
	case policy.Name == "" || binding.Name == "":
		return nil, nil, errors.New("decoding the admission policy: metadata.name is empty")
	case binding.Spec.PolicyName != policy.Name:
		return nil, nil, fmt.Errorf("decoding the admission policy: the binding %s binds %q, not the policy %s", binding.Name, binding.Spec.PolicyName, policy.Name)
	}
	return policy, binding, nil
}

// object is what ensureObject writes: a typed API object, referred to by pointer.
type object interface {
	metav1.Object
	runtime.Object
}

// ensureObject creates desired, or brings the stored object of its name to it with merge,
// which returns the object to write and whether it differs from the stored one. A conflict
// (another writer, for example a second operator replica starting at the same time) restarts
// from a fresh read. get, create and update are the methods of the object's typed client.
func ensureObject[T object](ctx context.Context, desired T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
	merge func(current, desired T) (T, bool),
	log logrus.FieldLogger,
) error {
	name := desired.GetName()
	kind := desired.GetObjectKind().GroupVersionKind().Kind
	return retry.OnError(retry.DefaultRetry, isRetriable, func() error {
		current, err := get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := create(ctx, desired.DeepCopyObject().(T), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating %s %s: %w", kind, name, err)
			}
			log.Info("Created admission object")
			return nil
		}
		if err != nil {
			return fmt.Errorf("getting %s %s: %w", kind, name, err)
		}
		updated, changed := merge(current, desired)
		if !changed {
			log.Debug("Admission object is up to date")
			return nil
		}
		if _, err := update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating %s %s: %w", kind, name, err)
		}
		log.Info("Updated admission object")
		return nil
	})
}

// mergePolicy returns a copy of current carrying desired's spec, labels and annotations, and
// whether it differs from current.
func mergePolicy(current, desired *admissionregistrationv1.MutatingAdmissionPolicy) (*admissionregistrationv1.MutatingAdmissionPolicy, bool) {
	return mergeObject(current, desired, (*admissionregistrationv1.MutatingAdmissionPolicy).DeepCopy,
		func(p *admissionregistrationv1.MutatingAdmissionPolicy) *admissionregistrationv1.MutatingAdmissionPolicySpec {
			return &p.Spec
		})
}

// mergeBinding is mergePolicy for the binding.
func mergeBinding(current, desired *admissionregistrationv1.MutatingAdmissionPolicyBinding) (*admissionregistrationv1.MutatingAdmissionPolicyBinding, bool) {
	return mergeObject(current, desired, (*admissionregistrationv1.MutatingAdmissionPolicyBinding).DeepCopy,
		func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) *admissionregistrationv1.MutatingAdmissionPolicyBindingSpec {
			return &b.Spec
		})
}

// mergeObject returns a copy of current (deepCopy) carrying desired's spec (the field spec
// points to), labels and annotations, and whether that copy differs from current.
func mergeObject[T metav1.Object, S any](current, desired T, deepCopy func(T) T, spec func(T) *S) (T, bool) {
	updated := deepCopy(current)
	changed := mergeMeta(updated, desired)
	if !equality.Semantic.DeepEqual(*spec(current), *spec(desired)) {
		*spec(updated) = *spec(deepCopy(desired))
		changed = true
	}
	return updated, changed
}

// mergeMeta adds desired's labels and annotations to updated, keeping the others, and reports
// whether that changed updated.
func mergeMeta(updated, desired metav1.Object) bool {
	changed := false
	if !containsAll(updated.GetLabels(), desired.GetLabels()) {
		updated.SetLabels(mergeMaps(updated.GetLabels(), desired.GetLabels()))
		changed = true
	}
	if !containsAll(updated.GetAnnotations(), desired.GetAnnotations()) {
		updated.SetAnnotations(mergeMaps(updated.GetAnnotations(), desired.GetAnnotations()))
		changed = true
	}
	return changed
}
