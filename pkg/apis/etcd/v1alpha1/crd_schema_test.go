package v1alpha1_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/deploy"
	"github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// These tests read the CRD that hack/update-codegen.sh generated into deploy/crd (embedded by
// package deploy) and check it against the Go types, so a marker or doc comment lost on the
// way fails without a cluster.

func crdVersion(t *testing.T) apiextensionsv1.CustomResourceDefinitionVersion {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(deploy.EtcdClusterCRD, &crd); err != nil {
		t.Fatalf("decoding the CRD: %v", err)
	}
	if crd.Spec.Group != v1alpha1.GroupName || crd.Spec.Names.Kind != "EtcdCluster" ||
		crd.Spec.Names.Plural != "etcdclusters" || !slices.Equal(crd.Spec.Names.ShortNames, []string{"etcd"}) ||
		crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("CRD group %q, names %+v, scope %q: want %s, EtcdCluster, etcdclusters, short name etcd, Namespaced",
			crd.Spec.Group, crd.Spec.Names, crd.Spec.Scope, v1alpha1.GroupName)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != v1alpha1.SchemeGroupVersion.Version {
		t.Fatalf("CRD versions %+v, want only %s", crd.Spec.Versions, v1alpha1.SchemeGroupVersion.Version)
	}
	return crd.Spec.Versions[0]
}

// opaque types marshal to a scalar; their schema has no properties to compare.
var opaque = map[reflect.Type]bool{
	reflect.TypeFor[resource.Quantity]():  true,
	reflect.TypeFor[intstr.IntOrString](): true,
	reflect.TypeFor[metav1.Time]():        true,
}

// checkDescriptions walks the JSON fields of typ and fails for every one the schema lacks or
// leaves undescribed, recursing into nested structs, slices and maps.
func checkDescriptions(t *testing.T, path string, typ reflect.Type, schema apiextensionsv1.JSONSchemaProps) int {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if opaque[typ] {
		return 0
	}
	switch typ.Kind() {
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Uint8 {
			return 0 // []byte is a base64 string
		}
		if schema.Items == nil || schema.Items.Schema == nil {
			t.Errorf("%s: schema has no items", path)
			return 0
		}
		return checkDescriptions(t, path+"[]", typ.Elem(), *schema.Items.Schema)
	case reflect.Map:
		if schema.AdditionalProperties == nil || schema.AdditionalProperties.Schema == nil {
			t.Errorf("%s: schema has no additionalProperties", path)
			return 0
		}
		return checkDescriptions(t, path+"{}", typ.Elem(), *schema.AdditionalProperties.Schema)
	case reflect.Struct:
	default:
		return 0
	}
	checked := 0
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			checked += checkDescriptions(t, path, f.Type, schema)
			continue
		}
		if name == "" {
			name = f.Name
		}
		fieldPath := path + "." + name
		prop, ok := schema.Properties[name]
		if !ok {
			t.Errorf("%s: field %s.%s has no schema", fieldPath, typ.Name(), f.Name)
			continue
		}
		if strings.TrimSpace(prop.Description) == "" {
			t.Errorf("%s: no description, kubectl explain would show nothing", fieldPath)
		}
		checked++
		checked += checkDescriptions(t, fieldPath, f.Type, prop)
	}
	return checked
}

func TestCRDDescribesEveryField(t *testing.T) {
	root := crdVersion(t).Schema.OpenAPIV3Schema
	if strings.TrimSpace(root.Description) == "" {
		t.Errorf("the EtcdCluster schema has no description")
	}
	for name, typ := range map[string]reflect.Type{
		"spec":   reflect.TypeFor[v1alpha1.EtcdClusterSpec](),
		"status": reflect.TypeFor[v1alpha1.EtcdClusterStatus](),
	} {
		prop := root.Properties[name]
		if strings.TrimSpace(prop.Description) == "" {
			t.Errorf(".%s: no description", name)
		}
		n := checkDescriptions(t, "."+name, typ, prop)
		// Guard against a walk that silently checks nothing: the spec alone has the pod
		// policy's hundreds of fields, the status at least its own ten.
		if n < 10 {
			t.Errorf(".%s: only %d fields checked", name, n)
		}
		t.Logf(".%s: %d fields described", name, n)
	}
}

func TestCRDDefaultsAndBounds(t *testing.T) {
	spec := crdVersion(t).Schema.OpenAPIV3Schema.Properties["spec"]
	defaults := map[string]any{
		"size":       float64(v1alpha1.DefaultSize),
		"version":    v1alpha1.DefaultVersion,
		"repository": v1alpha1.DefaultRepository,
	}
	for field, want := range defaults {
		prop := spec.Properties[field]
		if prop.Default == nil {
			t.Errorf("spec.%s has no default, want %v", field, want)
			continue
		}
		var got any
		if err := json.Unmarshal(prop.Default.Raw, &got); err != nil {
			t.Fatalf("spec.%s default %s: %v", field, prop.Default.Raw, err)
		}
		if got != want {
			t.Errorf("spec.%s default = %v, want %v", field, got, want)
		}
	}
	size := spec.Properties["size"]
	if size.Minimum == nil || *size.Minimum != 1 || size.Maximum == nil || *size.Maximum != float64(v1alpha1.MaxSize) {
		t.Errorf("spec.size bounds [%v, %v], want [1, %d]", size.Minimum, size.Maximum, v1alpha1.MaxSize)
	}
	for field, prop := range map[string]apiextensionsv1.JSONSchemaProps{
		"spec.version":            spec.Properties["version"],
		"spec.repository":         spec.Properties["repository"],
		"spec.pod.labels":         spec.Properties["pod"].Properties["labels"],
		"metadata.name (on root)": *crdVersion(t).Schema.OpenAPIV3Schema,
	} {
		if len(prop.XValidations) == 0 {
			t.Errorf("%s has no CEL rule", field)
		}
		for _, r := range prop.XValidations {
			if r.Message == "" {
				t.Errorf("%s: rule %q has no message: users would see the bare rule", field, r.Rule)
			}
		}
	}
	if labels := spec.Properties["pod"].Properties["labels"]; labels.MaxProperties == nil {
		t.Errorf("spec.pod.labels has a CEL rule over its entries but no maxProperties")
	}
	root := crdVersion(t).Schema.OpenAPIV3Schema
	var rules []string
	for _, r := range root.XValidations {
		rules = append(rules, r.Rule)
	}
	if !slices.ContainsFunc(rules, func(r string) bool { return strings.Contains(r, "size() <= 50") }) {
		t.Errorf("no root rule bounds metadata.name to %d characters: %v", v1alpha1.MaxNameLength, rules)
	}
}

func TestCRDSubresourcesAndColumns(t *testing.T) {
	v := crdVersion(t)
	if !v.Served || !v.Storage {
		t.Errorf("v1alpha1 served=%v storage=%v, want both", v.Served, v.Storage)
	}
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Fatalf("no status subresource")
	}
	scale := v.Subresources.Scale
	if scale == nil || scale.SpecReplicasPath != ".spec.size" || scale.StatusReplicasPath != ".status.size" ||
		scale.LabelSelectorPath == nil || *scale.LabelSelectorPath != ".status.selector" {
		t.Errorf("scale subresource = %+v, want .spec.size, .status.size, .status.selector", scale)
	}
	var columns []string
	for _, c := range v.AdditionalPrinterColumns {
		columns = append(columns, c.Name+"="+c.JSONPath)
	}
	want := []string{
		"Size=.spec.size", "Ready=.status.readyMembers", "Version=.status.currentVersion",
		"Phase=.status.phase", "Age=.metadata.creationTimestamp",
	}
	if !slices.Equal(columns, want) {
		t.Errorf("printer columns = %v, want %v", columns, want)
	}
}
