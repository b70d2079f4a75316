package crd

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/etcd-operator/etcd-operator/deploy"
)

const crdName = "etcdclusters.etcd.operator.dev"

var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// newClient returns a fake clientset holding objects. It is NewSimpleClientset because the
// field-managed tracker of NewClientset has no structured-merge schema for
// CustomResourceDefinitions in apiextensions-apiserver v0.36 and fails every write.
func newClient(objects ...runtime.Object) *fake.Clientset {
	return fake.NewSimpleClientset(objects...) //nolint:staticcheck // see above
}

func testLogger() logrus.FieldLogger {
	log, _ := logtest.NewNullLogger()
	return log
}

func desiredCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := Decode(deploy.EtcdClusterCRD)
	if err != nil {
		t.Fatalf("decoding the embedded CRD: %v", err)
	}
	if crd.Name != crdName {
		t.Fatalf("embedded CRD is named %q, want %q", crd.Name, crdName)
	}
	return crd
}

// withConditions returns crd with NamesAccepted and Established set to the given statuses.
func withConditions(crd *apiextensionsv1.CustomResourceDefinition, names, est apiextensionsv1.ConditionStatus) *apiextensionsv1.CustomResourceDefinition {
	crd = crd.DeepCopy()
	now := metav1.Now()
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: names, Reason: "Test", LastTransitionTime: now},
		{Type: apiextensionsv1.Established, Status: est, Reason: "Test", LastTransitionTime: now},
	}
	return crd
}

// establishOnWatch plays the apiserver's part that the fake clientset lacks: once Ensure has
// started watching the CRD, it sets the CRD's conditions to NamesAccepted=True and
// Established=True. The watch is opened inside the reactor, before the signal, so the update
// cannot fall between Ensure's read and its watch. The returned channel carries the goroutine's
// error, or nil once the status is written.
func establishOnWatch(t *testing.T, ctx context.Context, client *fake.Clientset) <-chan error {
	t.Helper()
	watching := make(chan struct{}, 1)
	client.PrependWatchReactor("customresourcedefinitions", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(crdResource, action.GetNamespace())
		select {
		case watching <- struct{}{}:
		default:
		}
		return true, w, err
	})
	done := make(chan error, 1)
	go func() {
		select {
		case <-watching:
		case <-ctx.Done():
			done <- ctx.Err()
			return
		}
		crds := client.ApiextensionsV1().CustomResourceDefinitions()
		crd, err := crds.Get(ctx, crdName, metav1.GetOptions{})
		if err != nil {
			done <- err
			return
		}
		_, err = crds.UpdateStatus(ctx, withConditions(crd, apiextensionsv1.ConditionTrue, apiextensionsv1.ConditionTrue), metav1.UpdateOptions{})
		done <- err
	}()
	return done
}

// writes returns the verbs of the create and update actions client recorded, in order.
func writes(client *fake.Clientset) []string {
	var verbs []string
	for _, a := range client.Actions() {
		if a.GetResource() != crdResource {
			continue
		}
		switch a.GetVerb() {
		case "create", "update":
			if a.GetSubresource() == "" {
				verbs = append(verbs, a.GetVerb())
			}
		}
	}
	return verbs
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestEnsureCreatesAndWaitsForEstablished(t *testing.T) {
	ctx := testContext(t)
	client := newClient()
	established := establishOnWatch(t, ctx, client)

	if err := Ensure(ctx, client, deploy.EtcdClusterCRD, testLogger()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if err := <-established; err != nil {
		t.Fatalf("setting the CRD status: %v", err)
	}
	if got, want := writes(client), []string{"create"}; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("writes = %v, want %v", got, want)
	}
	got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the created CRD: %v", err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, desiredCRD(t).Spec) {
		t.Errorf("created CRD spec differs from the embedded CRD")
	}
}

func TestEnsureUpdatesChangedSpec(t *testing.T) {
	ctx := testContext(t)
	old := withConditions(desiredCRD(t), apiextensionsv1.ConditionTrue, apiextensionsv1.ConditionTrue)
	old.ResourceVersion = "7"
	old.Labels = map[string]string{"owner": "admin"}
	old.Spec.Versions[0].AdditionalPrinterColumns = nil
	old.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	client := newClient(old)

	if err := Ensure(ctx, client, deploy.EtcdClusterCRD, testLogger()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if got, want := writes(client), []string{"update"}; !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	var sent *apiextensionsv1.CustomResourceDefinition
	for _, a := range client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "" {
			sent = u.GetObject().(*apiextensionsv1.CustomResourceDefinition)
		}
	}
	if sent.ResourceVersion != "7" {
		t.Errorf("update carried resourceVersion %q, want the one read, 7", sent.ResourceVersion)
	}
	if !equality.Semantic.DeepEqual(sent.Spec, desiredCRD(t).Spec) {
		t.Errorf("updated spec differs from the embedded CRD")
	}
	if sent.Labels["owner"] != "admin" {
		t.Errorf("update dropped the existing label owner=admin: labels %v", sent.Labels)
	}
	for k, v := range desiredCRD(t).Annotations {
		if sent.Annotations[k] != v {
			t.Errorf("update lacks annotation %s=%s: annotations %v", k, v, sent.Annotations)
		}
	}
}

func TestEnsureLeavesUnchangedCRDAlone(t *testing.T) {
	ctx := testContext(t)
	current := withConditions(desiredCRD(t), apiextensionsv1.ConditionTrue, apiextensionsv1.ConditionTrue)
	current.Labels = map[string]string{"owner": "admin"}
	current.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
	client := newClient(current)

	if err := Ensure(ctx, client, deploy.EtcdClusterCRD, testLogger()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if got := writes(client); len(got) != 0 {
		t.Errorf("writes = %v, want none", got)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "watch" {
			t.Errorf("Ensure watched a CRD that was already established")
		}
	}
}

func TestEnsureRetriesConflicts(t *testing.T) {
	ctx := testContext(t)
	old := withConditions(desiredCRD(t), apiextensionsv1.ConditionTrue, apiextensionsv1.ConditionTrue)
	old.Spec.Versions[0].AdditionalPrinterColumns = nil
	client := newClient(old)
	conflicts := 2
	client.PrependReactor("update", "customresourcedefinitions", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "" || conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, crdName, errors.New("the object has been modified"))
	})

	if err := Ensure(ctx, client, deploy.EtcdClusterCRD, testLogger()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if got, want := writes(client), []string{"update", "update", "update"}; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("writes = %v, want two conflicts then a successful update %v", got, want)
	}
	got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the CRD: %v", err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, desiredCRD(t).Spec) {
		t.Errorf("stored spec differs from the embedded CRD after the retries")
	}
}

func TestEnsureCreateRaceFallsBackToUpdate(t *testing.T) {
	ctx := testContext(t)
	client := newClient()
	// Another replica creates an older CRD between our read and our create.
	client.PrependReactor("create", "customresourcedefinitions", func(action k8stesting.Action) (bool, runtime.Object, error) {
		other := withConditions(desiredCRD(t), apiextensionsv1.ConditionTrue, apiextensionsv1.ConditionTrue)
		other.Spec.Versions[0].AdditionalPrinterColumns = nil
		if err := client.Tracker().Add(other); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, crdName)
	})

	if err := Ensure(ctx, client, deploy.EtcdClusterCRD, testLogger()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if got, want := writes(client), []string{"create", "update"}; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("writes = %v, want %v", got, want)
	}
}

func TestEnsureFailsFastWhenNamesAreRefused(t *testing.T) {
	ctx := testContext(t)
	client := newClient(withConditions(desiredCRD(t), apiextensionsv1.ConditionFalse, apiextensionsv1.ConditionFalse))

	err := Ensure(ctx, client, deploy.EtcdClusterCRD, testLogger())
	if !errors.Is(err, ErrNamesNotAccepted) {
		t.Fatalf("Ensure = %v, want an error wrapping ErrNamesNotAccepted", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Ensure waited for the deadline instead of failing fast")
	}
}

func TestEnsureReportsConditionsAtDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	client := newClient(withConditions(desiredCRD(t), apiextensionsv1.ConditionTrue, apiextensionsv1.ConditionFalse))

	err := Ensure(ctx, client, deploy.EtcdClusterCRD, testLogger())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ensure = %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "Established=False") {
		t.Errorf("error %q does not report the last seen conditions", err)
	}
}

func TestEnsureStopsWhenCRDIsDeletedWhileWaiting(t *testing.T) {
	ctx := testContext(t)
	client := newClient(withConditions(desiredCRD(t), apiextensionsv1.ConditionTrue, apiextensionsv1.ConditionFalse))
	client.PrependWatchReactor("customresourcedefinitions", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(crdResource, "")
		if err != nil {
			return true, nil, err
		}
		if err := client.Tracker().Delete(crdResource, "", crdName); err != nil {
			return true, nil, err
		}
		return true, w, nil
	})

	err := Ensure(ctx, client, deploy.EtcdClusterCRD, testLogger())
	if err == nil || !strings.Contains(err.Error(), "was deleted") {
		t.Fatalf("Ensure = %v, want an error saying the CRD was deleted", err)
	}
}

func TestDecodeRejectsWhatIsNotACRD(t *testing.T) {
	for name, in := range map[string]string{
		"not yaml":      "{",
		"other kind":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"old version":   "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\n",
		"unknown field": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\nspec:\n  grup: x\n",
		"no name":       "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode([]byte(in)); err == nil {
				t.Errorf("Decode accepted %q", in)
			}
		})
	}
}

func TestDecodeAppliesAPIServerDefaults(t *testing.T) {
	crd := desiredCRD(t)
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		t.Errorf("spec.conversion = %v, want the apiserver default strategy None", crd.Spec.Conversion)
	}
	if len(crd.Status.StoredVersions) != 0 {
		t.Errorf("status.storedVersions = %v, want empty: status belongs to the apiserver", crd.Status.StoredVersions)
	}
}

func TestMerge(t *testing.T) {
	desired := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name:        crdName,
			Labels:      map[string]string{"app": "etcd-operator"},
			Annotations: map[string]string{"controller-gen.kubebuilder.io/version": "v2"},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "etcd.operator.dev"},
	}
	for _, tc := range []struct {
		name            string
		labels, annots  map[string]string
		group           string
		wantChanged     bool
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{{
		name:            "equal, extra metadata kept",
		labels:          map[string]string{"app": "etcd-operator", "team": "db"},
		annots:          map[string]string{"controller-gen.kubebuilder.io/version": "v2", "note": "x"},
		group:           "etcd.operator.dev",
		wantLabels:      map[string]string{"app": "etcd-operator", "team": "db"},
		wantAnnotations: map[string]string{"controller-gen.kubebuilder.io/version": "v2", "note": "x"},
	}, {
		name:            "missing label added",
		labels:          map[string]string{"team": "db"},
		annots:          map[string]string{"controller-gen.kubebuilder.io/version": "v2"},
		group:           "etcd.operator.dev",
		wantChanged:     true,
		wantLabels:      map[string]string{"app": "etcd-operator", "team": "db"},
		wantAnnotations: map[string]string{"controller-gen.kubebuilder.io/version": "v2"},
	}, {
		name:            "stale annotation replaced",
		labels:          map[string]string{"app": "etcd-operator"},
		annots:          map[string]string{"controller-gen.kubebuilder.io/version": "v1", "note": "x"},
		group:           "etcd.operator.dev",
		wantChanged:     true,
		wantLabels:      map[string]string{"app": "etcd-operator"},
		wantAnnotations: map[string]string{"controller-gen.kubebuilder.io/version": "v2", "note": "x"},
	}, {
		name:            "spec differs",
		labels:          map[string]string{"app": "etcd-operator"},
		annots:          map[string]string{"controller-gen.kubebuilder.io/version": "v2"},
		group:           "old.operator.dev",
		wantChanged:     true,
		wantLabels:      map[string]string{"app": "etcd-operator"},
		wantAnnotations: map[string]string{"controller-gen.kubebuilder.io/version": "v2"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			current := &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: crdName, ResourceVersion: "3", Labels: tc.labels, Annotations: tc.annots},
				Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: tc.group},
			}
			before := current.DeepCopy()
			got, changed := merge(current, desired)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if !equality.Semantic.DeepEqual(current, before) {
				t.Errorf("merge modified its input")
			}
			if got.ResourceVersion != "3" {
				t.Errorf("resourceVersion = %q, want the current one, 3", got.ResourceVersion)
			}
			if got.Spec.Group != desired.Spec.Group {
				t.Errorf("spec.group = %q, want %q", got.Spec.Group, desired.Spec.Group)
			}
			if !equality.Semantic.DeepEqual(got.Labels, tc.wantLabels) {
				t.Errorf("labels = %v, want %v", got.Labels, tc.wantLabels)
			}
			if !equality.Semantic.DeepEqual(got.Annotations, tc.wantAnnotations) {
				t.Errorf("annotations = %v, want %v", got.Annotations, tc.wantAnnotations)
			}
		})
	}
}

// An installed CRD of a higher schema revision (a newer operator's), or of one that cannot be
// read, is never written over; a lower or equal revision, or none (before revisions), is.
func TestEnsureNeverWritesOverANewerSchema(t *testing.T) {
	own, err := SchemaRevision(desiredCRD(t))
	if err != nil || own < 1 {
		t.Fatalf("the embedded CRD's schema revision = %d, %v; want at least 1", own, err)
	}
	for _, tc := range []struct {
		name       string
		installed  *string // nil: no annotation
		wantWrites []string
	}{
		{"newer", ptrTo(strconv.Itoa(own + 1)), nil},
		{"unreadable", ptrTo("two"), nil},
		{"negative", ptrTo("-1"), nil},
		{"same", ptrTo(strconv.Itoa(own)), []string{"update"}},
		{"older", ptrTo(strconv.Itoa(own - 1)), []string{"update"}},
		{"none: before revisions", nil, []string{"update"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			installed := withConditions(desiredCRD(t), apiextensionsv1.ConditionTrue, apiextensionsv1.ConditionTrue)
			delete(installed.Annotations, AnnotationSchemaRevision)
			if tc.installed != nil {
				installed.Annotations[AnnotationSchemaRevision] = *tc.installed
			}
			installed.Spec.Versions[0].AdditionalPrinterColumns = nil // a schema unlike ours
			client := newClient(installed)
			if err := Ensure(ctx, client, deploy.EtcdClusterCRD, testLogger()); err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if got := writes(client); !equality.Semantic.DeepEqual(got, tc.wantWrites) {
				t.Errorf("writes = %v, want %v", got, tc.wantWrites)
			}
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if kept := got.Spec.Versions[0].AdditionalPrinterColumns == nil; kept != (tc.wantWrites == nil) {
				t.Errorf("installed schema kept: %v, want %v", kept, tc.wantWrites == nil)
			}
		})
	}
}

// A CRD without a schema revision is refused as the operator's own: it could never be
// compared.
func TestEnsureRefusesACRDWithoutRevision(t *testing.T) {
	yaml := strings.Replace(string(deploy.EtcdClusterCRD), AnnotationSchemaRevision, "example.com/other", 1)
	err := Ensure(testContext(t), newClient(), []byte(yaml), testLogger())
	if err == nil || !strings.Contains(err.Error(), "has no "+AnnotationSchemaRevision) {
		t.Errorf("Ensure = %v, want a missing-revision error", err)
	}
}

func ptrTo[T any](v T) *T { return &v }
