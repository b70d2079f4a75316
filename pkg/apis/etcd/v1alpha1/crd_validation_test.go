package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/deploy"
	"github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// These tests put EtcdClusters through the apiextensions-apiserver's own code, offline: the
// registry strategies the apiserver builds for the CRD (OpenAPI schema validation, then the
// x-kubernetes-validations rules compiled by schema/cel with the per-call cost limit and the
// runtime cost budget, with ratcheting on update), after the pruning and structural defaulting
// it applies when it decodes a request. A rule that is wrong, or whose message changed, fails
// here rather than on a cluster.

// strategy is the part of the apiserver's registry strategy for EtcdClusters that these tests
// drive; the status subresource's strategy has only the update half.
type strategy interface {
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// createStrategy is the main resource's strategy, which also takes creates.
type createStrategy interface {
	strategy
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
}

// apiServer holds what the apiserver derives from the CRD to serve EtcdClusters.
type apiServer struct {
	t          *testing.T
	structural *structuralschema.Structural
	main       createStrategy
	status     strategy
}

// v1CRD decodes the generated EtcdCluster CRD with the defaults the apiserver gives a v1 CRD.
func v1CRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	return v1CRDOf(t, deploy.EtcdClusterCRD)
}

// v1CRDOf decodes the generated CRD def with the defaults the apiserver gives a v1 CRD.
func v1CRDOf(t *testing.T, def []byte) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(def, &crd); err != nil {
		t.Fatalf("decoding the CRD: %v", err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&crd)
	return &crd
}

// newAPIServer builds the schema validators, structural schema and strategies as the
// apiextensions-apiserver's CRD handler does for a served version (customresource_handler.go),
// for EtcdClusters.
func newAPIServer(t *testing.T) *apiServer {
	return newAPIServerFor(t, deploy.EtcdClusterCRD, "EtcdCluster")
}

// newAPIServerFor is newAPIServer for the kind of the CRD def.
func newAPIServerFor(t *testing.T, def []byte, kind string) *apiServer {
	t.Helper()
	v := v1CRDOf(t, def).Spec.Versions[0]
	var schema apiextensions.CustomResourceValidation
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, &schema, nil); err != nil {
		t.Fatal(err)
	}
	s, err := structuralschema.NewStructural(schema.OpenAPIV3Schema)
	if err != nil {
		t.Fatalf("the CRD's schema is not structural: %v", err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		t.Fatal(err)
	}
	schemaValidator, _, err := validation.NewSchemaValidator(schema.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	statusSchema := schema.OpenAPIV3Schema.Properties["status"]
	statusValidator, _, err := validation.NewSchemaValidator(&statusSchema)
	if err != nil {
		t.Fatal(err)
	}
	var status apiextensions.CustomResourceSubresourceStatus
	var scale *apiextensions.CustomResourceSubresourceScale
	if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceStatus_To_apiextensions_CustomResourceSubresourceStatus(v.Subresources.Status, &status, nil); err != nil {
		t.Fatal(err)
	}
	if v.Subresources.Scale != nil {
		scale = &apiextensions.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(v.Subresources.Scale, scale, nil); err != nil {
			t.Fatal(err)
		}
	}
	main := customresource.NewStrategy(nil, true, v1alpha1.SchemeGroupVersion.WithKind(kind),
		schemaValidator, statusValidator, s, &status, scale, v.SelectableFields)
	return &apiServer{t: t, structural: s, main: main, status: customresource.NewStatusStrategy(main)}
}

// decode turns the YAML of an EtcdCluster in namespace default into what the apiserver
// validates: unknown fields pruned (a test manifest with one fails, as kubectl's strict field
// validation would), nulls of fields that are not nullable dropped, and defaults applied.
func (a *apiServer) decode(manifest string) *unstructured.Unstructured {
	a.t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		a.t.Fatalf("%v:\n%s", err, manifest)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		a.t.Fatalf("%v:\n%s", err, manifest)
	}
	u.SetNamespace("default")
	if unknown := structuralpruning.PruneWithOptions(u.Object, a.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(unknown) > 0 {
		a.t.Fatalf("unknown fields %v in\n%s", unknown, manifest)
	}
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, a.structural)
	structuraldefaulting.Default(u.Object, a.structural)
	return u
}

// create validates a POST of manifest.
func (a *apiServer) create(manifest string) (*unstructured.Unstructured, field.ErrorList) {
	u := a.decode(manifest)
	a.main.PrepareForCreate(context.Background(), u)
	return u, a.main.Validate(context.Background(), u)
}

// update validates a PUT of manifest over the stored object old, through the main resource or
// the status subresource.
func (a *apiServer) update(s strategy, manifest, old string) field.ErrorList {
	u, o := a.decode(manifest), a.decode(old)
	s.PrepareForUpdate(context.Background(), u, o)
	return s.ValidateUpdate(context.Background(), u, o)
}

// etcdCluster is the manifest of the EtcdCluster demo with the given spec and status, each
// YAML indented by two spaces (or empty to leave it out).
func etcdCluster(spec, status string) string {
	m := "apiVersion: etcd.operator.dev/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: demo\n  resourceVersion: \"1\"\n"
	if spec != "" {
		m += "spec:\n" + spec
	}
	if status != "" {
		m += "status:\n" + status
	}
	return m
}

// checkErrors fails unless errs is empty (want "") or one of them contains want.
func checkErrors(t *testing.T, errs field.ErrorList, want string) {
	t.Helper()
	switch {
	case want == "" && len(errs) > 0:
		t.Errorf("refused, want accepted: %v", errs.ToAggregate())
	case want != "" && len(errs) == 0:
		t.Errorf("accepted, want refused with %q", want)
	case want != "" && !strings.Contains(errs.ToAggregate().Error(), want):
		t.Errorf("refused with %v\nwant an error containing %q", errs.ToAggregate(), want)
	default:
		t.Logf("%v", errs.ToAggregate())
	}
}

// claim is spec.storage with a volumeClaimTemplate whose claim spec holds the given lines,
// each indented for it.
func claim(claimSpec string) string {
	return "  storage:\n    volumeClaimTemplate:\n      spec:\n" + claimSpec
}

const (
	requests4Gi = "        resources: {requests: {storage: 4Gi}}\n"

	atMostOne = "spec.storage: Invalid value: storage takes at most one of emptyDir and volumeClaimTemplate"
	atLeast   = "spec.storage.volumeClaimTemplate.spec.resources: Invalid value: resources.requests.storage must be at least 512Mi"
	sizeLimit = "spec.storage.emptyDir.sizeLimit: Invalid value: emptyDir.sizeLimit must be at least 512Mi"
	reserved  = "are reserved for the operator"
	immutable = "spec.storage: Invalid value: spec.storage.emptyDir and spec.storage.volumeClaimTemplate cannot change once the cluster has started"
)

func TestCRDValidatesStorageOnCreate(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"emptyDir", "  storage: {emptyDir: {}}\n", ""},
		{"emptyDir with a size limit", "  storage: {emptyDir: {sizeLimit: 1Gi}}\n", ""},
		{"both emptyDir and volumeClaimTemplate", "  storage:\n    emptyDir: {}\n    volumeClaimTemplate: {spec: {resources: {requests: {storage: 4Gi}}}}\n", atMostOne},
		{"neither: the operator fills in the claim", "  storage: {}\n", ""},
		{"only a retention policy: the operator fills in the claim", "  storage: {retentionPolicy: {whenDeleted: Delete}}\n", ""},
		{"no storage: the operator fills it in", "  size: 3\n", ""},

		{"claim of 4Gi", claim(requests4Gi), ""},
		{"claim of 512Mi", claim("        resources: {requests: {storage: 512Mi}}\n"), ""},
		{"claim of 512Mi in bytes", claim("        resources: {requests: {storage: 536870912}}\n"), ""},
		{"claim of 0.5Gi", claim("        resources: {requests: {storage: 0.5Gi}}\n"), ""},
		{"claim of 511Mi", claim("        resources: {requests: {storage: 511Mi}}\n"), atLeast},
		{"claim of 64Mi", claim("        resources: {requests: {storage: 64Mi}}\n"), atLeast},
		{"claim of 1Mi", claim("        resources: {requests: {storage: 1Mi}}\n"), atLeast},
		{"claim of 512Mi minus a byte", claim("        resources: {requests: {storage: 536870911}}\n"), atLeast},
		{"claim of 512M (decimal)", claim("        resources: {requests: {storage: 512M}}\n"), atLeast},

		{"emptyDir of 512Mi", "  storage: {emptyDir: {sizeLimit: 512Mi}}\n", ""},
		{"emptyDir of 512Mi in bytes", "  storage: {emptyDir: {sizeLimit: 536870912}}\n", ""},
		{"emptyDir in memory of 2Gi", "  storage: {emptyDir: {medium: Memory, sizeLimit: 2Gi}}\n", ""},
		{"emptyDir of 511Mi", "  storage: {emptyDir: {sizeLimit: 511Mi}}\n", sizeLimit},
		{"emptyDir of 1Mi", "  storage: {emptyDir: {sizeLimit: 1Mi}}\n", sizeLimit},
		{"emptyDir of 0", "  storage: {emptyDir: {sizeLimit: \"0\"}}\n", sizeLimit},
		{"emptyDir of 512M (decimal)", "  storage: {emptyDir: {sizeLimit: 512M}}\n", sizeLimit},
		{"claim with a limit only", claim("        resources: {limits: {storage: 4Gi}}\n"), atLeast},
		{"claim with requests but no storage", claim("        resources: {requests: {cpu: \"1\"}}\n"), atLeast},
		{"claim with empty resources", claim("        resources: {}\n"), atLeast},
		{"claim without resources", claim("        storageClassName: fast\n"), "spec.storage.volumeClaimTemplate.spec.resources: Required value"},
		{"claim without spec", "  storage:\n    volumeClaimTemplate: {metadata: {labels: {a: b}}}\n", "spec.storage.volumeClaimTemplate.spec: Required value"},
		{"claim of a malformed size", claim("        resources: {requests: {storage: 4GB}}\n"), "spec.storage.volumeClaimTemplate.spec.resources.requests.storage in body should match"},

		{"accessModes ReadWriteOnce", claim(requests4Gi + "        accessModes: [ReadWriteOnce]\n"), ""},
		{"accessModes ReadWriteOncePod", claim(requests4Gi + "        accessModes: [ReadWriteOncePod]\n"), ""},
		{"accessModes ReadWriteMany", claim(requests4Gi + "        accessModes: [ReadWriteMany]\n"), `spec.storage.volumeClaimTemplate.spec.accessModes[0]: Unsupported value: "ReadWriteMany": supported values: "ReadWriteOnce", "ReadWriteOncePod"`},
		{"accessModes ReadOnlyMany", claim(requests4Gi + "        accessModes: [ReadOnlyMany]\n"), `spec.storage.volumeClaimTemplate.spec.accessModes[0]: Unsupported value: "ReadOnlyMany"`},
		{"accessModes ReadWriteOnce and ReadWriteMany", claim(requests4Gi + "        accessModes: [ReadWriteOnce, ReadWriteMany]\n"), `accessModes[1]: Unsupported value: "ReadWriteMany"`},

		{"volumeMode Filesystem", claim(requests4Gi + "        volumeMode: Filesystem\n"), ""},
		{"volumeMode Block", claim(requests4Gi + "        volumeMode: Block\n"), `spec.storage.volumeClaimTemplate.spec.volumeMode: Unsupported value: "Block": supported values: "Filesystem"`},

		{"claim labels and annotations of the user", "  storage:\n    volumeClaimTemplate:\n      metadata: {labels: {team: db}, annotations: {example.com/backup: daily}}\n      spec: {resources: {requests: {storage: 4Gi}}}\n", ""},
		{"claim label under etcd.operator.dev/", "  storage:\n    volumeClaimTemplate:\n      metadata: {labels: {etcd.operator.dev/cluster: other}}\n      spec: {resources: {requests: {storage: 4Gi}}}\n", "spec.storage.volumeClaimTemplate.metadata.labels: Invalid value: labels under etcd.operator.dev/ " + reserved},
		{"claim annotation under etcd.operator.dev/", "  storage:\n    volumeClaimTemplate:\n      metadata: {annotations: {etcd.operator.dev/member: x}}\n      spec: {resources: {requests: {storage: 4Gi}}}\n", "spec.storage.volumeClaimTemplate.metadata.annotations: Invalid value: annotations under etcd.operator.dev/ " + reserved},

		{"retention Retain/Delete", claim(requests4Gi) + "    retentionPolicy: {whenDeleted: Retain, whenScaled: Delete}\n", ""},
		{"retention Delete/Retain", claim(requests4Gi) + "    retentionPolicy: {whenDeleted: Delete, whenScaled: Retain}\n", ""},
		{"retention whenDeleted Orphan", claim(requests4Gi) + "    retentionPolicy: {whenDeleted: Orphan}\n", `spec.storage.retentionPolicy.whenDeleted: Unsupported value: "Orphan": supported values: "Retain", "Delete"`},
		{"retention whenScaled delete", claim(requests4Gi) + "    retentionPolicy: {whenScaled: delete}\n", `spec.storage.retentionPolicy.whenScaled: Unsupported value: "delete": supported values: "Retain", "Delete"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := a.create(etcdCluster(tc.spec, ""))
			checkErrors(t, errs, tc.want)
		})
	}
}

func TestCRDDefaultsRetentionPolicy(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct {
		name, retention, wantDeleted, wantScaled string
	}{
		{"empty", "{}", "Retain", "Delete"},
		{"whenDeleted only", "{whenDeleted: Delete}", "Delete", "Delete"},
		{"whenScaled only", "{whenScaled: Retain}", "Retain", "Retain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, errs := a.create(etcdCluster(claim(requests4Gi)+"    retentionPolicy: "+tc.retention+"\n", ""))
			if len(errs) > 0 {
				t.Fatalf("refused: %v", errs.ToAggregate())
			}
			policy, _, _ := unstructured.NestedStringMap(u.Object, "spec", "storage", "retentionPolicy")
			if policy["whenDeleted"] != tc.wantDeleted || policy["whenScaled"] != tc.wantScaled {
				t.Errorf("retentionPolicy %s defaulted to %v, want whenDeleted %s, whenScaled %s",
					tc.retention, policy, tc.wantDeleted, tc.wantScaled)
			}
		})
	}
}

// spec.recovery: quorumLoss Manual by default, gracePeriodSeconds 300 by default, 0 kept (it
// is a pointer, so that an explicit 0 is not taken for "left out"), bounds and enum enforced.
func TestCRDValidatesRecovery(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct {
		name, recovery, want string
		wantPolicy           string
		wantGrace            int64
	}{
		{"empty: defaults", "{}", "", "Manual", 300},
		{"FromSurvivor", "{quorumLoss: FromSurvivor}", "", "FromSurvivor", 300},
		{"no grace period", "{quorumLoss: FromSurvivor, gracePeriodSeconds: 0}", "", "FromSurvivor", 0},
		{"a day", "{gracePeriodSeconds: 86400}", "", "Manual", 86400},
		{"more than a day", "{gracePeriodSeconds: 86401}", "spec.recovery.gracePeriodSeconds: Invalid value: 86401", "", 0},
		{"negative", "{gracePeriodSeconds: -1}", "spec.recovery.gracePeriodSeconds: Invalid value: -1", "", 0},
		{"unknown policy", "{quorumLoss: Automatic}", `spec.recovery.quorumLoss: Unsupported value: "Automatic": supported values: "Manual", "FromSurvivor"`, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, errs := a.create(etcdCluster("  recovery: "+tc.recovery+"\n", ""))
			checkErrors(t, errs, tc.want)
			if tc.want != "" || len(errs) > 0 {
				return
			}
			policy, _, _ := unstructured.NestedString(u.Object, "spec", "recovery", "quorumLoss")
			grace, _, _ := unstructured.NestedInt64(u.Object, "spec", "recovery", "gracePeriodSeconds")
			if policy != tc.wantPolicy || grace != tc.wantGrace {
				t.Errorf("recovery %s read back as quorumLoss %q, gracePeriodSeconds %d; want %q, %d",
					tc.recovery, policy, grace, tc.wantPolicy, tc.wantGrace)
			}
		})
	}
}

func TestCRDStorageCannotChangeOnceStarted(t *testing.T) {
	a := newAPIServer(t)
	const (
		started  = "  size: 3\n  readyMembers: 3\n"
		notYet   = "  size: 0\n  readyMembers: 0\n"
		emptyDir = "  storage: {emptyDir: {}}\n"
	)
	classFast := claim("        storageClassName: fast\n" + requests4Gi)
	for _, tc := range []struct {
		name      string
		oldSpec   string
		oldStatus string
		newSpec   string
		want      string
	}{
		{"unchanged", classFast, started, classFast, ""},
		{"other storageClassName", classFast, started, claim("        storageClassName: slow\n" + requests4Gi), immutable},
		{"storageClassName removed", classFast, started, claim(requests4Gi), immutable},
		{"other size", classFast, started, claim("        storageClassName: fast\n        resources: {requests: {storage: 8Gi}}\n"), immutable},
		{"claim label added", classFast, started, "  storage:\n    volumeClaimTemplate:\n      metadata: {labels: {a: b}}\n      spec:\n        storageClassName: fast\n" + requests4Gi, immutable},
		{"claim to emptyDir", classFast, started, emptyDir, immutable},
		{"emptyDir to claim", emptyDir, started, classFast, immutable},
		{"emptyDir to memory", emptyDir, started, "  storage: {emptyDir: {medium: Memory}}\n", immutable},
		{"storage removed", classFast, started, "  size: 3\n", immutable},
		{"retentionPolicy added", classFast, started, classFast + "    retentionPolicy: {whenDeleted: Delete}\n", ""},
		{"retentionPolicy changed", classFast + "    retentionPolicy: {whenDeleted: Delete}\n", started,
			classFast + "    retentionPolicy: {whenDeleted: Retain, whenScaled: Retain}\n", ""},
		{"size changed, storage not", classFast + "  size: 3\n", started, classFast + "  size: 5\n", ""},

		{"not started: other storageClassName", classFast, notYet, claim("        storageClassName: slow\n" + requests4Gi), ""},
		{"not started: claim to emptyDir", classFast, notYet, emptyDir, ""},
		{"no status: other size", classFast, "", claim("        resources: {requests: {storage: 8Gi}}\n"), ""},
		{"no status: emptyDir to claim", emptyDir, "", classFast, ""},

		{"created before storage: operator sets emptyDir", "  size: 3\n", started, "  size: 3\n" + emptyDir, ""},
		{"created before storage: claim set", "  size: 3\n", started, "  size: 3\n" + classFast, ""},
		{"created without spec: storage set", "", started, emptyDir, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := a.update(a.main, etcdCluster(tc.newSpec, ""), etcdCluster(tc.oldSpec, tc.oldStatus))
			checkErrors(t, errs, tc.want)
		})
	}
}

// TestCRDStatusUpdatesKeepStorage: the operator writes status through the status subresource,
// where the apiserver keeps the stored spec, so the rule never refuses a status write; and a
// spec sent along with the status is dropped, not checked.
func TestCRDStatusUpdatesKeepStorage(t *testing.T) {
	a := newAPIServer(t)
	claim4Gi := claim(requests4Gi)
	for _, tc := range []struct {
		name, oldStatus, newSpec, newStatus string
	}{
		{"first members counted", "", claim4Gi, "  size: 1\n"},
		{"size grows", "  size: 1\n", claim4Gi, "  size: 3\n"},
		{"storage sent along is ignored", "  size: 3\n", "  storage: {emptyDir: {}}\n", "  size: 3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := a.update(a.status, etcdCluster(tc.newSpec, tc.newStatus), etcdCluster(claim4Gi, tc.oldStatus))
			checkErrors(t, errs, "")
		})
	}
}

// TestCRDRulesFitCostLimits runs the validation the apiserver runs when the CRD is created,
// which compiles every rule and refuses one whose estimated cost exceeds the per-call limit,
// or a CRD whose rules together exceed the CRD-wide limit. The estimator knows the size of a
// map's values only when they are read by index: the 64Mi rule reads
// self.requests['storage'], because self.requests.storage counts as a string of unknown
// length and the CRD would be refused.
func TestCRDRulesFitCostLimits(t *testing.T) {
	validate := func(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
		var internal apiextensions.CustomResourceDefinition
		if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
			t.Fatal(err)
		}
		// As the CRD strategy's PrepareForCreate: the storage version is the stored one.
		internal.Status = apiextensions.CustomResourceDefinitionStatus{StoredVersions: []string{v1alpha1.SchemeGroupVersion.Version}}
		return crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal)
	}
	crd := v1CRD(t)
	if errs := validate(crd); len(errs) > 0 {
		t.Fatalf("the apiserver would refuse the CRD: %v", errs.ToAggregate())
	}

	// The check bites: a rule over every pair of an unbounded list of unbounded strings is
	// refused for its cost.
	costly := crd.DeepCopy()
	root := costly.Spec.Versions[0].Schema.OpenAPIV3Schema
	root.XValidations = append(root.XValidations, apiextensionsv1.ValidationRule{
		Rule: "!has(self.spec.pod) || self.spec.pod.env.all(e, self.spec.pod.env.all(f, !e.value.matches(f.value)))",
	})
	errs := validate(costly)
	if !strings.Contains(errs.ToAggregate().Error(), "estimated rule cost exceeds budget") {
		t.Errorf("a costly rule was not refused for its cost: %v", errs.ToAggregate())
	}
}

const (
	unsupported = "version must be an etcd release the operator supports"
	oneMinor    = "spec.version: Invalid value: spec.version may change by one minor version at a time"
	fromRunning = "spec.version: Invalid value: spec.version must be within one minor version of the version the cluster runs"
)

func TestCRDValidatesVersionOnCreate(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct{ version, want string }{
		{"3.6.16", ""},
		{"v3.7.3", ""},
		{"3.5.35", ""},
		{"3.5.32", ""},
		{"3.5.100", ""},
		{"3.5.31", unsupported},
		{"3.5.4", unsupported},
		{"2.3.8", unsupported},
		{"3.4.30", unsupported},
		{"3.8.0", unsupported},
		{"4.0.0", unsupported},
		{"3.6", "version must be an etcd release as MAJOR.MINOR.PATCH"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			_, errs := a.create(etcdCluster("  version: \""+tc.version+"\"\n  storage: {emptyDir: {}}\n", ""))
			checkErrors(t, errs, tc.want)
		})
	}
}

func TestCRDVersionStepsOnceStarted(t *testing.T) {
	a := newAPIServer(t)
	started := func(running string) string {
		st := "  size: 3\n  readyMembers: 3\n"
		if running != "" {
			st += "  currentVersion: " + running + "\n"
		}
		return st
	}
	spec := func(v string) string { return "  version: \"" + v + "\"\n  storage: {emptyDir: {}}\n" }
	for _, tc := range []struct {
		name, old, running, next, want string
		notStarted                     bool
	}{
		{name: "patch up", old: "3.6.16", running: "3.6.16", next: "3.6.17"},
		{name: "patch down", old: "3.6.16", running: "3.6.16", next: "3.6.2"},
		{name: "minor up", old: "3.5.35", running: "3.5.35", next: "3.6.16"},
		{name: "minor up with a v", old: "v3.6.16", running: "3.6.16", next: "v3.7.3"},
		{name: "minor down", old: "3.7.3", running: "3.7.3", next: "3.6.16"},
		{name: "set back during an upgrade", old: "3.7.3", running: "3.6.16", next: "3.6.16"},
		{name: "skipped minor", old: "3.5.35", running: "3.5.35", next: "3.7.3", want: oneMinor},
		{name: "skipped minor down", old: "3.7.3", running: "3.7.3", next: "3.5.35", want: oneMinor},
		{name: "next minor before the last one finished", old: "3.6.16", running: "3.5.35", next: "3.7.3", want: fromRunning},
		{name: "status not reported yet", old: "3.6.16", next: "3.7.3"},
		{name: "not started: skip allowed", old: "3.5.35", next: "3.7.3", notStarted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := started(tc.running)
			if tc.notStarted {
				status = "  size: 0\n  readyMembers: 0\n"
			}
			errs := a.update(a.main, etcdCluster(spec(tc.next), ""), etcdCluster(spec(tc.old), status))
			checkErrors(t, errs, tc.want)
		})
	}
}

// TestCRDValidatesRepository: spec.repository must be an image repository the kubelet can
// parse (registry host, then lowercase path components); a tag or digest has its own message.
func TestCRDValidatesRepository(t *testing.T) {
	const (
		notAnImage = "repository must be an image repository"
		tagged     = "repository must not carry a tag or digest"
	)
	a := newAPIServer(t)
	for _, tc := range []struct{ repository, want string }{
		{"gcr.io/etcd-development/etcd", ""},
		{"quay.io/coreos/etcd", ""},
		{"etcd", ""},
		{"bitnami/etcd", ""},
		{"registry.local:5000/etcd", ""},
		{"localhost:5000/team/etcd", ""},
		{"localhost/etcd", ""},
		{"Registry.Example.COM/etcd", ""},
		{"registry:5000/my_team/etcd-build.v2", ""},
		{"a__b/c", ""},
		{"UPPER CASE/with spaces", notAnImage},
		{"Upper/etcd", notAnImage},
		{"gcr.io/Etcd", notAnImage},
		{"gcr.io/etcd/", notAnImage},
		{"/etcd", notAnImage},
		{"gcr.io//etcd", notAnImage},
		{"gcr.io/-etcd", notAnImage},
		{"gcr.io/etcd..x", notAnImage},
		{"https://gcr.io/etcd", notAnImage},
		{"gcr.io/etcd:v3.6.16", tagged},
		{"gcr.io/etcd@sha256:0123", tagged},
	} {
		t.Run(tc.repository, func(t *testing.T) {
			_, errs := a.create(etcdCluster("  repository: \""+tc.repository+"\"\n  storage: {emptyDir: {}}\n", ""))
			checkErrors(t, errs, tc.want)
			if tc.want == tagged && strings.Contains(errs.ToAggregate().Error(), notAnImage) {
				t.Errorf("a tagged repository also gets %q: %v", notAnImage, errs.ToAggregate())
			}
		})
	}
}
