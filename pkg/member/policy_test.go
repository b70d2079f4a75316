package member

import (
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

func seedPod(c *api.EtcdCluster) *corev1.Pod {
	return Pod(c, Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, "op:1")
}

// Only the variables spec.pod.env may set reach etcd; an object stored before the CRD refused
// the others still never passes them on.
func TestPodEnvPolicy(t *testing.T) {
	c := testCluster()
	c.Spec.Pod.Env = []corev1.EnvVar{
		{Name: "ETCD_SNAPSHOT_COUNT", Value: "5000"},
		{Name: "GOMAXPROCS", Value: "2"},
		{Name: "ETCD_FORCE_NEW_CLUSTER", Value: "true"},
		{Name: "ETCD_UNSAFE_NO_FSYNC", Value: "true"},
		{Name: "ETCD_STRICT_RECONFIG_CHECK", Value: "false"},
		{Name: "ETCD_DISCOVERY_SRV", Value: "example.com"},
		{Name: "ETCD_QUOTA_BACKEND_BYTES", Value: "1"},
		{Name: "ETCD_CONFIG_FILE", Value: "/x"},
		{Name: "ETCD_LOG_LEVEL", Value: "debug"},
	}
	var got []string
	for _, e := range seedPod(c).Spec.Containers[0].Env {
		got = append(got, e.Name+"="+e.Value)
	}
	want := []string{"ETCD_SNAPSHOT_COUNT=5000", "GOMAXPROCS=2", "ETCD_LOG_LEVEL=debug"}
	if !slices.Equal(got, want) {
		t.Errorf("env = %v, want %v", got, want)
	}
	for _, name := range api.OperatorEtcdEnv {
		if api.EnvAllowed(name) {
			t.Errorf("%s, set by the operator, is allowed", name)
		}
	}
}

func TestPodSecurityContextMergesWithDefault(t *testing.T) {
	restricted := &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(nonRootUID), RunAsGroup: ptr.To(nonRootUID), FSGroup: ptr.To(nonRootUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	for _, tc := range []struct {
		name string
		user *corev1.PodSecurityContext
		want func(*corev1.PodSecurityContext)
	}{
		{"none: the default", nil, func(*corev1.PodSecurityContext) {}},
		{"empty: the default", &corev1.PodSecurityContext{}, func(*corev1.PodSecurityContext) {}},
		{"fsGroup only keeps the rest", &corev1.PodSecurityContext{FSGroup: ptr.To(int64(2000))},
			func(sc *corev1.PodSecurityContext) { sc.FSGroup = ptr.To(int64(2000)) }},
		{"own user and group", &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(1000)), RunAsGroup: ptr.To(int64(1000))},
			func(sc *corev1.PodSecurityContext) {
				sc.RunAsUser, sc.RunAsGroup = ptr.To(int64(1000)), ptr.To(int64(1000))
			}},
		{"supplemental groups and a Localhost profile", &corev1.PodSecurityContext{
			SupplementalGroups: []int64{5},
			SeccompProfile:     &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("etcd.json")},
		}, func(sc *corev1.PodSecurityContext) {
			sc.SupplementalGroups = []int64{5}
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("etcd.json")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCluster()
			c.Spec.Pod.SecurityContext = tc.user
			want := restricted.DeepCopy()
			tc.want(want)
			if got := seedPod(c).Spec.SecurityContext; !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("securityContext = %+v, want %+v", got, want)
			}
		})
	}
}

func TestPodDefaultRequests(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name       string
		user, want corev1.ResourceRequirements
	}{
		{"none: the defaults", corev1.ResourceRequirements{},
			corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("50m"), "memory": q("128Mi")}}},
		{"own cpu request", corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1")}},
			corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1"), "memory": q("128Mi")}}},
		{"memory limit only: no request of ours under it",
			corev1.ResourceRequirements{Limits: corev1.ResourceList{"memory": q("64Mi")}},
			corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("50m")}, Limits: corev1.ResourceList{"memory": q("64Mi")}}},
		{"both given", corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("2"), "memory": q("1Gi")}},
			corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("2"), "memory": q("1Gi")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCluster()
			c.Spec.Pod.Resources = tc.user
			for _, p := range []*corev1.Pod{seedPod(c), Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}}, "op:1")} {
				if got := p.Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(got, tc.want) {
					t.Errorf("%s: resources = %v, want %v", p.Name, got, tc.want)
				}
				for _, ic := range p.Spec.InitContainers {
					if ic.Resources.Requests.Cpu().IsZero() || ic.Resources.Requests.Memory().IsZero() {
						t.Errorf("%s: init container %s has no requests: %v", p.Name, ic.Name, ic.Resources)
					}
				}
			}
			if c.Spec.Pod.Resources.Requests != nil && tc.user.Requests == nil {
				t.Errorf("the pod policy was changed: %v", c.Spec.Pod.Resources)
			}
		})
	}
	// A pod without a policy gets the defaults too.
	c := testCluster()
	c.Spec.Pod = nil
	if got := seedPod(c).Spec.Containers[0].Resources.Requests; !equality.Semantic.DeepEqual(got, DefaultRequests) {
		t.Errorf("requests without a pod policy = %v, want %v", got, DefaultRequests)
	}
}

func TestQuotaBackendBytes(t *testing.T) {
	const mi = int64(1) << 20
	claimOf := func(size string) *api.StorageSpec {
		return &api.StorageSpec{VolumeClaimTemplate: &api.VolumeClaimTemplate{Spec: api.ClaimSpec{
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{"storage": resource.MustParse(size)}}}}}
	}
	emptyDirOf := func(limit string) *api.StorageSpec {
		ed := &corev1.EmptyDirVolumeSource{}
		if limit != "" {
			ed.SizeLimit = ptr.To(resource.MustParse(limit))
		}
		return &api.StorageSpec{EmptyDir: ed}
	}
	for _, tc := range []struct {
		name    string
		storage *api.StorageSpec
		want    int64 // 0: no flag
	}{
		{"no storage yet", nil, 0},
		{"emptyDir without a limit: etcd's default", emptyDirOf(""), 0},
		{"emptyDir of 512Mi: the smallest quota", emptyDirOf("512Mi"), 64 * mi},
		{"emptyDir of 1Gi", emptyDirOf("1Gi"), 320 * mi},
		{"default claim of 4Gi", claimOf("4Gi"), 1856 * mi},
		{"claim of 8Gi", claimOf("8Gi"), 3904 * mi},
		{"claim of 100Gi: at most 8Gi", claimOf("100Gi"), 8192 * mi},
		{"claim of 64Mi stored before the 512Mi floor: etcd's default", claimOf("64Mi"), 0},
		{"emptyDir of 1Mi stored before the floor: etcd's default", emptyDirOf("1Mi"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCluster()
			c.Spec.Storage = tc.storage
			args := etcdArgv(seedPod(c).Spec.Containers[0])
			v, found := argValue(args, "--quota-backend-bytes")
			switch {
			case tc.want == 0 && found:
				t.Errorf("--quota-backend-bytes=%s, want none", v)
			case tc.want != 0 && v != strconv.FormatInt(tc.want, 10):
				t.Errorf("--quota-backend-bytes=%q, want %d (%d Mi)", v, tc.want, tc.want/mi)
			}
			if tc.want == 0 {
				return
			}
			if size, _ := storageSize(&c.Spec); 2*tc.want+walReserve.Value() > size.Value() {
				t.Errorf("a quota of %d and a copy of it and the WAL exceed the volume of %s", tc.want, size.String())
			}
		})
	}
}
