package crd

import (
	"context"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
)

// TestEmbeddedCRDPassesAPIServerValidation runs the validation the apiserver runs on a CRD
// create, including the structural schema checks and the compilation and cost estimation of
// every CEL rule, so a CRD the apiserver would refuse fails here without a cluster.
func TestEmbeddedCRDPassesAPIServerValidation(t *testing.T) {
	v1 := desiredCRD(t)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, &internal, nil); err != nil {
		t.Fatalf("converting the CRD to the internal version: %v", err)
	}
	// The apiserver's create strategy records the storage version before validating.
	for _, v := range internal.Spec.Versions {
		if v.Storage {
			internal.Status.StoredVersions = append(internal.Status.StoredVersions, v.Name)
		}
	}
	for _, err := range validation.ValidateCustomResourceDefinition(context.Background(), &internal) {
		t.Error(err)
	}
}
