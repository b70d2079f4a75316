package deploy

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// ChartContainer renders the chart as release etcd-operator in namespace with the values set
// and returns the operator's container, for the tests of package deploy_test (which may
// import the operator's packages: package deploy may not, the operator embeds it).
func ChartContainer(t *testing.T, namespace string, sets ...string) corev1.Container {
	t.Helper()
	var d appsv1.Deployment
	renderChart(t, namespace, sets).one(t, "Deployment").decodeInto(t, &d)
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the chart's Deployment has %d containers, want 1", len(d.Spec.Template.Spec.Containers))
	}
	return d.Spec.Template.Spec.Containers[0]
}
