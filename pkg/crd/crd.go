// Package crd installs the operator's CustomResourceDefinitions at startup: it creates a CRD,
// or updates it when the operator carries a different spec, and waits until the apiserver
// serves it, so that informers started afterwards find the resource. It installs the same way
// the admission policy that completes the EtcdCluster CRD: the default of spec.tls, which a
// schema default cannot give (policy.go).
package crd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

// Timeout bounds Ensure as a whole: writing the CRD and waiting until it is Established.
// A shorter deadline on the caller's context wins.
const Timeout = time.Minute

// AnnotationSchemaRevision on a CRD is the revision of its schema: an integer that grows with
// every change of the schema (the marker on the EtcdCluster type sets it; a test in
// pkg/apis/etcd/v1alpha1 fails when the schema changes and the revision does not). An operator
// never writes its CRD over one of a higher revision, so that while two operator versions run
// (a rollout, a rollback) the older one cannot take fields away from the newer one and the two
// never flap the CRD between them. A CRD without the annotation is of revision 0, written
// before revisions existed.
const AnnotationSchemaRevision = "etcd.operator.dev/schema-revision"

// ErrNamesNotAccepted is returned (wrapped) when the apiserver refuses the CRD's names, for
// example because another CRD already serves the same plural or short name. Waiting longer
// does not help: an admin has to resolve the conflict.
var ErrNamesNotAccepted = errors.New("names not accepted")

// Ensure makes the cluster serve the CustomResourceDefinition given as YAML in crdYAML: it
// creates the CRD when it is missing, updates it when its spec differs from crdYAML (labels and
// annotations of crdYAML are added, others are kept), and leaves it untouched otherwise, or when
// the installed CRD's AnnotationSchemaRevision is higher than crdYAML's (or unreadable). Then it
// waits until the CRD's conditions NamesAccepted and Established are True. It returns an error
// when crdYAML is not a CRD, when a write fails for a reason other than a conflict (conflicts
// are retried on a fresh read), when the names are refused (ErrNamesNotAccepted), or when ctx
// or Timeout expires first.
func Ensure(ctx context.Context, client apiextensionsclientset.Interface, crdYAML []byte, log logrus.FieldLogger) error {
	desired, err := Decode(crdYAML)
	if err != nil {
		return err
	}
	if desired.Annotations[AnnotationSchemaRevision] == "" {
		return fmt.Errorf("the operator's CustomResourceDefinition %s has no %s annotation", desired.Name, AnnotationSchemaRevision)
	}
	if _, err := SchemaRevision(desired); err != nil {
		return fmt.Errorf("checking the operator's CustomResourceDefinition %s: %w", desired.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()

	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	log = log.WithField("crd", desired.Name)
	if err := write(ctx, crds, desired, log); err != nil {
		return err
	}
	return waitEstablished(ctx, crds, desired.Name, log)
}

// Decode parses one CustomResourceDefinition of apiextensions.k8s.io/v1 from YAML, rejecting
// unknown fields, and applies the apiserver's defaults to it so that it compares equal to the
// object the apiserver stores.
func Decode(crdYAML []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(crdYAML, crd); err != nil {
		return nil, fmt.Errorf("decoding CustomResourceDefinition: %w", err)
	}
	gvk := apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")
	if crd.GroupVersionKind() != gvk {
		return nil, fmt.Errorf("decoding CustomResourceDefinition: got apiVersion %q kind %q, want %q %q",
			crd.APIVersion, crd.Kind, gvk.GroupVersion().String(), gvk.Kind)
	}
	if crd.Name == "" {
		return nil, errors.New("decoding CustomResourceDefinition: metadata.name is empty")
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	// Status belongs to the apiserver; SetObjectDefaults fills storedVersions in it.
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	return crd, nil
}

// write creates the CRD or brings the existing one to the desired spec. A conflict (another
// writer, for example a second operator replica starting at the same time) restarts from a
// fresh read.
func write(ctx context.Context, crds apiextensionsclient.CustomResourceDefinitionInterface, desired *apiextensionsv1.CustomResourceDefinition, log logrus.FieldLogger) error {
	return retry.OnError(retry.DefaultRetry, isRetriable, func() error {
		current, err := crds.Get(ctx, desired.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := crds.Create(ctx, desired.DeepCopy(), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating CustomResourceDefinition %s: %w", desired.Name, err)
			}
			log.Info("Created CustomResourceDefinition")
			return nil
		}
		if err != nil {
			return fmt.Errorf("getting CustomResourceDefinition %s: %w", desired.Name, err)
		}

		if newer, err := isNewer(current, desired); newer || err != nil {
			log.WithError(err).WithFields(logrus.Fields{
				"installed": current.Annotations[AnnotationSchemaRevision], "own": desired.Annotations[AnnotationSchemaRevision],
			}).Warn("CustomResourceDefinition has a newer or unknown schema revision than this operator's: left as it is")
			return nil
		}
		updated, changed := merge(current, desired)
		if !changed {
			log.Debug("CustomResourceDefinition is up to date")
			return nil
		}
		if _, err := crds.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating CustomResourceDefinition %s: %w", desired.Name, err)
		}
		log.Info("Updated CustomResourceDefinition")
		return nil
	})
}

// SchemaRevision reads a CRD's AnnotationSchemaRevision: 0 when it has none.
func SchemaRevision(crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	v, ok := crd.Annotations[AnnotationSchemaRevision]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("reading annotation %s=%q: not a revision", AnnotationSchemaRevision, v)
	}
	return n, nil
}

// isNewer reports whether the installed CRD current must be left as it is: its schema revision
// is higher than desired's, or unreadable (err set), in which case it may well be newer too.
func isNewer(current, desired *apiextensionsv1.CustomResourceDefinition) (bool, error) {
	have, err := SchemaRevision(current)
	if err != nil {
		return true, err
	}
	want, err := SchemaRevision(desired)
	if err != nil {
		return true, err
	}
	return have > want, nil
}

// isRetriable reports whether write should start over: after a conflict on update, or when a
// concurrent writer created the CRD between our read and our create.
func isRetriable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

// merge returns a copy of current carrying desired's spec, labels and annotations, with
// current's resourceVersion, and whether that copy differs from current.
func merge(current, desired *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, bool) {
	return mergeObject(current, desired, (*apiextensionsv1.CustomResourceDefinition).DeepCopy,
		func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionSpec {
			return &c.Spec
		})
}

func containsAll(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func mergeMaps(base, overlay map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(overlay))
	maps.Copy(out, base)
	maps.Copy(out, overlay)
	return out
}
