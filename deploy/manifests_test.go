package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

func decodeFile(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
}

// TestKustomizationsListEveryManifest keeps the kustomizations and the files in step: a
// manifest missing from resources would silently not be installed.
func TestKustomizationsListEveryManifest(t *testing.T) {
	for dir, skip := range map[string][]string{
		// networkpolicy/ is optional and applied by hand.
		// monitoring/ needs the Prometheus operator's CRDs and is applied on its own.
		".":          {"kustomization.yaml", "namespaced", "networkpolicy", "monitoring"},
		"namespaced": {"kustomization.yaml"},
	} {
		var k struct {
			APIVersion string   `json:"apiVersion"`
			Kind       string   `json:"kind"`
			Namespace  string   `json:"namespace,omitempty"`
			Resources  []string `json:"resources"`
		}
		decodeFile(t, filepath.Join(dir, "kustomization.yaml"), &k)
		var files []string
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			if slices.Contains(skip, rel) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.IsDir() && filepath.Ext(p) == ".yaml" {
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(files)
		listed := slices.Sorted(slices.Values(k.Resources))
		if !slices.Equal(files, listed) {
			t.Errorf("%s/kustomization.yaml lists %v, the folder holds %v", dir, listed, files)
		}
	}
}

func TestDeploymentIsLockedDown(t *testing.T) {
	var d appsv1.Deployment
	decodeFile(t, "deployment.yaml", &d)
	if d.Namespace != "etcd-operator-system" || d.Name != "etcd-operator" {
		t.Errorf("Deployment is %s/%s, want etcd-operator-system/etcd-operator", d.Namespace, d.Name)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != "etcd-operator" {
		t.Errorf("serviceAccountName = %q, want etcd-operator", pod.ServiceAccountName)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container securityContext %+v is not locked down", sc)
	}
	want := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	if !equality.Semantic.DeepEqual(c.Resources, want) {
		t.Errorf("resources = %v, want %v", c.Resources, want)
	}
	if !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("args %v lack --leader-elect=true", c.Args)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if env["OPERATOR_IMAGE"].Value != c.Image {
		t.Errorf("OPERATOR_IMAGE = %q, want the container's image %q", env["OPERATOR_IMAGE"].Value, c.Image)
	}
	for name, path := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"} {
		if e := env[name]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != path {
			t.Errorf("%s is not the downward API's %s", name, path)
		}
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "health" {
			t.Errorf("probe for %s missing or not on the health port", path)
		}
	}
	if len(c.Ports) != 2 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 8080 ||
		c.Ports[1].Name != "health" || c.Ports[1].ContainerPort != 8081 {
		t.Errorf("ports = %v, want metrics on 8080 and health on 8081 (the operator's defaults)", c.Ports)
	}
}

// TestNamespacedVariantMatches checks that deploy/namespaced differs from deploy/ only where it
// must: the Deployment gains the single-namespace flags, and the Role grants the ClusterRole's
// rules minus the cluster-scoped ones (the CRDs, the admission policy: the admin installs
// them) plus the leader-election Lease.
func TestNamespacedVariantMatches(t *testing.T) {
	var cluster, namespaced appsv1.Deployment
	decodeFile(t, "deployment.yaml", &cluster)
	decodeFile(t, "namespaced/deployment.yaml", &namespaced)
	wantArgs := append(slices.Clone(cluster.Spec.Template.Spec.Containers[0].Args), "--namespace=$(POD_NAMESPACE)", "--skip-crd-install=true")
	if got := namespaced.Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, wantArgs) {
		t.Errorf("namespaced args = %v, want %v", got, wantArgs)
	}
	namespaced.Spec.Template.Spec.Containers[0].Args = cluster.Spec.Template.Spec.Containers[0].Args
	namespaced.Namespace = cluster.Namespace
	if !equality.Semantic.DeepEqual(cluster, namespaced) {
		t.Errorf("namespaced/deployment.yaml differs from deployment.yaml beyond namespace and args")
	}

	var clusterRole rbacv1.ClusterRole
	var leaderRole, role rbacv1.Role
	decodeFile(t, "rbac/clusterrole.yaml", &clusterRole)
	decodeFile(t, "rbac/leader-election-role.yaml", &leaderRole)
	decodeFile(t, "namespaced/role.yaml", &role)
	var want []rbacv1.PolicyRule
	for _, r := range clusterRole.Rules {
		if !slices.Contains(r.APIGroups, "apiextensions.k8s.io") && !slices.Contains(r.APIGroups, "admissionregistration.k8s.io") {
			want = append(want, r)
		}
	}
	want = append(want, leaderRole.Rules...)
	if !equality.Semantic.DeepEqual(role.Rules, want) {
		t.Errorf("namespaced Role rules = %v, want %v", role.Rules, want)
	}
}

// TestMetricsNetworkPolicy: the example policy selects the operator's pod and opens the
// metrics port to the monitoring namespace alone and the health port for the probes.
func TestMetricsNetworkPolicy(t *testing.T) {
	var np networkingv1.NetworkPolicy
	var d appsv1.Deployment
	decodeFile(t, "networkpolicy/operator.yaml", &np)
	decodeFile(t, "deployment.yaml", &d)
	if np.Namespace != d.Namespace || !equality.Semantic.DeepEqual(np.Spec.PodSelector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("policy %s/%s selects %v, want the operator's pod %s/%v", np.Namespace, np.Name,
			np.Spec.PodSelector.MatchLabels, d.Namespace, d.Spec.Template.Labels)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policyTypes = %v, want Ingress only", np.Spec.PolicyTypes)
	}
	ports := map[string]bool{}
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = true
	}
	open := map[string]int{} // port -> peers allowed (0: anyone)
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port == nil || !ports[p.Port.String()] {
				t.Errorf("rule opens port %v, not a named port of the operator", p.Port)
				continue
			}
			open[p.Port.String()] = len(rule.From)
		}
	}
	if n, ok := open["metrics"]; !ok || n == 0 {
		t.Errorf("metrics port open to %d peers (present: %v), want to the monitoring namespace only", n, ok)
	}
	if _, ok := open["health"]; !ok || len(open) != 2 {
		t.Errorf("open ports %v, want metrics and health only", open)
	}
}

// TestMetricsService: the Service the ServiceMonitor scrapes selects the operator's pod and
// sends its metrics port to the container's, in both variants.
func TestMetricsService(t *testing.T) {
	var d appsv1.Deployment
	decodeFile(t, "deployment.yaml", &d)
	for _, path := range []string{"service.yaml", "namespaced/service.yaml"} {
		var svc corev1.Service
		decodeFile(t, path, &svc)
		if !equality.Semantic.DeepEqual(svc.Spec.Selector, d.Spec.Template.Labels) {
			t.Errorf("%s selects %v, want the operator's pod %v", path, svc.Spec.Selector, d.Spec.Template.Labels)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
			t.Errorf("%s ports = %v, want metrics to the container's metrics port", path, svc.Spec.Ports)
		}
	}
}
