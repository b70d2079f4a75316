//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/deploy"
	"github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/crd"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const crdFile = "../../deploy/crd/etcd.operator.dev_etcdclusters.yaml"

// backupCRDFile is the EtcdBackup CRD, which the backup examples need.
const backupCRDFile = "../../deploy/crd/etcd.operator.dev_etcdbackups.yaml"

// scheduleCRDFile is the EtcdBackupSchedule CRD, which the schedule example needs.
const scheduleCRDFile = "../../deploy/crd/etcd.operator.dev_etcdbackupschedules.yaml"

// installCRD applies deploy/crd the way an admin does and waits until it is served. The
// operator applies the same file at startup, so this changes nothing when it already ran.
func installCRD(t *testing.T, f *framework.Framework) {
	t.Helper()
	f.MustKubectl("apply", "-f", crdFile, "-f", backupCRDFile, "-f", scheduleCRDFile)
	f.MustKubectl("wait", "--for=condition=Established", "crd/etcdclusters.etcd.operator.dev", "crd/etcdbackups.etcd.operator.dev",
		"crd/etcdbackupschedules.etcd.operator.dev", "--timeout=60s")
}

// serverMessage strips what framework adds around kubectl's stderr, leaving the apiserver's
// message as a user sees it.
func serverMessage(err error) string {
	s := err.Error()
	if i := strings.Index(s, "exit status 1: "); i >= 0 {
		s = s[i+len("exit status 1: "):]
	}
	return s
}

// dryRun applies manifest with --dry-run=server in the test namespace: the apiserver runs
// defaulting, schema, CEL and strict field validation but stores nothing.
func dryRun(t *testing.T, f *framework.Framework, manifest string) (string, error) {
	t.Helper()
	return f.NS("apply", "--dry-run=server", "-f", writeTemp(t, manifest))
}

func cluster(name, spec string) string {
	return "apiVersion: etcd.operator.dev/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// claimTemplate is spec.storage.volumeClaimTemplate, indented for spec.storage, of a claim of
// the given size with the extra claim spec lines (indented by eight spaces).
func claimTemplate(size, claimSpec string) string {
	return "    volumeClaimTemplate:\n      spec:\n        resources: {requests: {storage: " + size + "}}\n" + claimSpec
}

func TestCRDRejectsMalformedClusters(t *testing.T) {
	f := framework.New(t)
	installCRD(t, f)

	for _, tc := range []struct {
		name     string
		manifest string
		want     string
	}{
		{"size 0", cluster("demo", "  size: 0\n"), "spec.size in body should be greater than or equal to 1"},
		{"size -1", cluster("demo", "  size: -1\n"), "spec.size in body should be greater than or equal to 1"},
		{"size 100", cluster("demo", "  size: 100\n"), "spec.size in body should be less than or equal to 9"},
		{"size three", cluster("demo", "  size: three\n"), `spec.size in body must be of type integer: "string"`},
		{"version latest!", cluster("demo", "  version: latest!\n"), "version must be an etcd release as MAJOR.MINOR.PATCH"},
		{"unknown spec field", cluster("demo", "  size: 3\n  replicas: 3\n"), `unknown field "spec.replicas"`},
		{"name of 51 characters", cluster(strings.Repeat("a", 51), "  size: 3\n"), "metadata.name must be at most 50 characters"},
		{"name starting with a digit", cluster("3nodes", "  size: 3\n"), "metadata.name must start with a lowercase letter"},
		{"repository with a tag", cluster("demo", "  repository: gcr.io/etcd-development/etcd:v3.6.16\n"), "repository must not carry a tag or digest"},
		{"repository with a digest", cluster("demo", "  repository: gcr.io/etcd-development/etcd@sha256:0123\n"), "repository must not carry a tag or digest"},
		{"reserved label", cluster("demo", "  pod:\n    labels:\n      etcd.operator.dev/cluster: other\n"), "labels under etcd.operator.dev/ are reserved for the operator"},
		{"repository that is no image reference", cluster("demo", "  repository: \"UPPER CASE/with spaces\"\n"), "repository must be an image repository"},
		{"storage with emptyDir and a claim", cluster("demo", "  storage:\n    emptyDir: {}\n"+claimTemplate("4Gi", "")), "storage takes at most one of emptyDir and volumeClaimTemplate"},
		{"claim of 511Mi", cluster("demo", "  storage:\n"+claimTemplate("511Mi", "")), "resources.requests.storage must be at least 512Mi"},
		{"claim of 1Mi", cluster("demo", "  storage:\n"+claimTemplate("1Mi", "")), "resources.requests.storage must be at least 512Mi"},
		{"emptyDir of 1Mi", cluster("demo", "  storage: {emptyDir: {sizeLimit: 1Mi}}\n"), "emptyDir.sizeLimit must be at least 512Mi"},
		{"env ETCD_FORCE_NEW_CLUSTER", cluster("demo", "  pod:\n    env:\n    - {name: ETCD_FORCE_NEW_CLUSTER, value: \"true\"}\n"), "ETCD_FORCE_NEW_CLUSTER is set by the operator"},
		{"env ETCD_UNSAFE_NO_FSYNC", cluster("demo", "  pod:\n    env:\n    - {name: ETCD_UNSAFE_NO_FSYNC, value: \"true\"}\n"), "ETCD_UNSAFE_NO_FSYNC is refused: of the ETCD_ variables spec.pod.env may set only those that tune a member"},
		{"securityContext runAsNonRoot false", cluster("demo", "  pod:\n    securityContext: {runAsNonRoot: false}\n"), "securityContext.runAsNonRoot cannot be false"},
		{"claim without a storage request", cluster("demo", "  storage:\n    volumeClaimTemplate:\n      spec:\n        resources: {requests: {cpu: \"1\"}}\n"), "resources.requests.storage must be at least 512Mi"},
		{"claim without resources", cluster("demo", "  storage:\n    volumeClaimTemplate:\n      spec: {storageClassName: standard}\n"), "spec.storage.volumeClaimTemplate.spec.resources: Required value"},
		{"claim ReadWriteMany", cluster("demo", "  storage:\n"+claimTemplate("4Gi", "        accessModes: [ReadWriteMany]\n")), `spec.storage.volumeClaimTemplate.spec.accessModes[0]: Unsupported value: "ReadWriteMany"`},
		{"claim ReadOnlyMany", cluster("demo", "  storage:\n"+claimTemplate("4Gi", "        accessModes: [ReadOnlyMany]\n")), `spec.storage.volumeClaimTemplate.spec.accessModes[0]: Unsupported value: "ReadOnlyMany"`},
		{"claim volumeMode Block", cluster("demo", "  storage:\n"+claimTemplate("4Gi", "        volumeMode: Block\n")), `spec.storage.volumeClaimTemplate.spec.volumeMode: Unsupported value: "Block"`},
		{"claim reserved label", cluster("demo", "  storage:\n    volumeClaimTemplate:\n      metadata: {labels: {etcd.operator.dev/cluster: other}}\n      spec: {resources: {requests: {storage: 4Gi}}}\n"), "labels under etcd.operator.dev/ are reserved for the operator"},
		{"claim reserved annotation", cluster("demo", "  storage:\n    volumeClaimTemplate:\n      metadata: {annotations: {etcd.operator.dev/member: x}}\n      spec: {resources: {requests: {storage: 4Gi}}}\n"), "annotations under etcd.operator.dev/ are reserved for the operator"},
		{"retention whenDeleted Orphan", cluster("demo", "  storage:\n"+claimTemplate("4Gi", "")+"    retentionPolicy: {whenDeleted: Orphan}\n"), `spec.storage.retentionPolicy.whenDeleted: Unsupported value: "Orphan"`},
		{"retention whenScaled delete", cluster("demo", "  storage:\n"+claimTemplate("4Gi", "")+"    retentionPolicy: {whenScaled: delete}\n"), `spec.storage.retentionPolicy.whenScaled: Unsupported value: "delete"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := dryRun(t, f, tc.manifest)
			if err == nil {
				t.Fatalf("accepted:\n%s\nkubectl: %s", tc.manifest, out)
			}
			msg := serverMessage(err)
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("rejected with %q, want a message containing %q", msg, tc.want)
			}
			t.Logf("rejected: %s", msg)
		})
	}
}

func TestCRDAcceptsExamples(t *testing.T) {
	f := framework.New(t)
	installCRD(t, f)
	for _, example := range []string{"../../example/etcdcluster.yaml", "../../example/etcdcluster-storage.yaml", "../../example/etcdcluster-podpolicy.yaml",
		"../../example/etcdbackup-volume.yaml", "../../example/etcdcluster-restore.yaml", "../../example/etcdbackupschedule.yaml",
		"../../example/etcdcluster-tls.yaml"} {
		// The examples name their namespace (default), or none (the backup ones): no -n, so
		// default.
		if out, err := f.Kubectl("apply", "--dry-run=server", "-f", example); err != nil {
			t.Errorf("%s rejected: %s", example, serverMessage(err))
		} else {
			t.Logf("%s: %s", example, strings.TrimSpace(out))
		}
	}
}

func TestCRDDefaults(t *testing.T) {
	f := framework.New(t)
	installCRD(t, f)
	out, err := f.NS("create", "--dry-run=server", "-o", "json", "-f", writeTemp(t, cluster("defaults", "  paused: true\n")))
	if err != nil {
		t.Fatalf("creating a cluster with an almost empty spec: %s", serverMessage(err))
	}
	var got v1alpha1.EtcdCluster
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	if got.Spec.Size != v1alpha1.DefaultSize || got.Spec.Version != v1alpha1.DefaultVersion || got.Spec.Repository != v1alpha1.DefaultRepository {
		t.Errorf("defaulted spec size=%d version=%q repository=%q, want %d %q %q", got.Spec.Size, got.Spec.Version,
			got.Spec.Repository, v1alpha1.DefaultSize, v1alpha1.DefaultVersion, v1alpha1.DefaultRepository)
	}
}

// TestCRDDefaultsRetentionPolicy: a retentionPolicy left empty keeps the claims when the
// cluster is deleted and deletes those of members removed by a scale-down.
func TestCRDDefaultsRetentionPolicy(t *testing.T) {
	f := framework.New(t)
	installCRD(t, f)
	manifest := cluster("retention", "  paused: true\n  storage:\n"+claimTemplate("4Gi", "")+"    retentionPolicy: {}\n")
	out, err := f.NS("create", "--dry-run=server", "-o", "json", "-f", writeTemp(t, manifest))
	if err != nil {
		t.Fatalf("creating a cluster with an empty retentionPolicy: %s", serverMessage(err))
	}
	var got v1alpha1.EtcdCluster
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	if p := got.Spec.Storage.RetentionPolicy; p == nil || p.WhenDeleted != v1alpha1.RetentionRetain || p.WhenScaled != v1alpha1.RetentionDelete {
		t.Errorf("retentionPolicy {} defaulted to %+v, want whenDeleted Retain, whenScaled Delete", p)
	}
}

// TestCRDStorageImmutableOnceStarted checks the transition rule on EtcdCluster: once
// status.size says etcd has members, spec.storage.emptyDir and volumeClaimTemplate cannot
// change, while retentionPolicy and the rest of the spec can. The clusters are paused and
// have no pods, so a running operator has no member to count and leaves the status.size the
// test writes through the status subresource as it is.
func TestCRDStorageImmutableOnceStarted(t *testing.T) {
	f := framework.New(t)
	installCRD(t, f)
	const immutable = "spec.storage.emptyDir and spec.storage.volumeClaimTemplate cannot change once the cluster has started"
	withStorage := func(storage string) string {
		return cluster("frozen", "  paused: true\n  storage:\n"+storage)
	}
	class := func(name string) string { return claimTemplate("512Mi", "        storageClassName: "+name+"\n") }
	setStatusSize := func(name string, size int) {
		t.Helper()
		f.MustNS("patch", "etcdcluster/"+name, "--subresource=status", "--type=merge", "-p", fmt.Sprintf(`{"status":{"size":%d}}`, size))
		got := strings.TrimSpace(f.MustNS("get", "etcdcluster", name, "-o", "jsonpath={.status.size}"))
		if got != strconv.Itoa(size) {
			t.Fatalf("status.size of %s = %q after patching it to %d", name, got, size)
		}
	}
	check := func(desc, manifest, want string) {
		t.Helper()
		out, err := dryRun(t, f, manifest)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: refused: %s", desc, serverMessage(err))
		case want == "":
			t.Logf("%s: accepted: %s", desc, strings.TrimSpace(out))
		case err == nil:
			t.Errorf("%s: accepted, want refused with %q: %s", desc, want, strings.TrimSpace(out))
		case !strings.Contains(serverMessage(err), want):
			t.Errorf("%s: refused with %q, want a message containing %q", desc, serverMessage(err), want)
		default:
			t.Logf("%s: refused: %s", desc, serverMessage(err))
		}
	}

	f.Apply(withStorage(class("standard")))
	check("before start, other storageClassName", withStorage(class("other")), "")
	check("before start, emptyDir", withStorage("    emptyDir: {}\n"), "")

	setStatusSize("frozen", 3)
	check("unchanged", withStorage(class("standard")), "")
	check("other storageClassName", withStorage(class("other")), immutable)
	check("other size", withStorage(claimTemplate("8Gi", "        storageClassName: standard\n")), immutable)
	check("claim to emptyDir", withStorage("    emptyDir: {}\n"), immutable)
	check("storage removed", cluster("frozen", "  paused: true\n"), immutable)
	check("retentionPolicy changed", withStorage(class("standard")+"    retentionPolicy: {whenDeleted: Delete, whenScaled: Retain}\n"), "")
	check("size changed", cluster("frozen", "  paused: true\n  size: 5\n  storage:\n"+class("standard")), "")

	setStatusSize("frozen", 0)
	check("no members again, other storageClassName", withStorage(class("other")), "")

	// A cluster created before spec.storage existed: the operator fills storage in on a
	// cluster that already has members.
	f.Apply(cluster("legacy", "  paused: true\n"))
	setStatusSize("legacy", 3)
	check("storage set on a started cluster created without it",
		cluster("legacy", "  paused: true\n  storage:\n    emptyDir: {}\n"), "")
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCRDColumnsExplainAndScale checks what kubectl users see: the printer columns, kubectl
// explain on every spec field, and kubectl scale through the scale subresource, bounded by the
// same validation as spec.size. The cluster is paused so that a running operator leaves it be.
func TestCRDColumnsExplainAndScale(t *testing.T) {
	f := framework.New(t)
	installCRD(t, f)
	f.Apply(cluster("columns", "  size: 3\n  paused: true\n"))

	header := strings.Fields(strings.SplitN(f.MustNS("get", "etcd", "columns"), "\n", 2)[0])
	if want := []string{"NAME", "SIZE", "READY", "VERSION", "PHASE", "AGE"}; !slices.Equal(header, want) {
		t.Errorf("kubectl get etcd columns = %v, want %v", header, want)
	}

	explain := f.MustKubectl("explain", "etcdcluster.spec")
	for _, field := range []string{"size", "version", "repository", "paused", "pod", "storage"} {
		if !strings.Contains(explain, field+"\t") {
			t.Errorf("kubectl explain etcdcluster.spec does not list %s:\n%s", field, explain)
		}
	}
	if strings.Contains(explain, "<no description>") {
		t.Errorf("kubectl explain etcdcluster.spec shows a field without description:\n%s", explain)
	}
	for _, field := range []string{"spec.pod", "spec.storage", "status", "status.members"} {
		if out := f.MustKubectl("explain", "etcdcluster."+field); strings.Contains(out, "<no description>") {
			t.Errorf("kubectl explain etcdcluster.%s shows a field without description:\n%s", field, out)
		}
	}

	f.Scale("etcdcluster/columns", 5)
	if size := strings.TrimSpace(f.MustNS("get", "etcd", "columns", "-o", "jsonpath={.spec.size}")); size != "5" {
		t.Errorf("after kubectl scale --replicas=5 spec.size = %s, want 5", size)
	}
	_, err := f.NS("scale", "etcdcluster/columns", "--replicas=10")
	if err == nil || !strings.Contains(err.Error(), "spec.size in body should be less than or equal to 9") {
		t.Errorf("kubectl scale --replicas=10 = %v, want a rejection naming the maximum", err)
	} else {
		t.Logf("kubectl scale --replicas=10 rejected: %s", serverMessage(err))
	}
}

// TestCRDEnsureAgainstAPIServer runs crd.Ensure, which the operator runs at startup, against the
// real apiserver on a copy of the EtcdCluster CRD in a throwaway group, so that deleting and
// recreating it cannot disturb clusters of other tests: create and wait for Established, an
// unchanged second run that writes nothing (the apiserver's stored form must compare equal to
// the embedded YAML), and an update when the schema changed.
func TestCRDEnsureAgainstAPIServer(t *testing.T) {
	framework.New(t) // checks KUBECONFIG and the cluster
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatalf("loading KUBECONFIG: %v", err)
	}
	client, err := apiextensionsclientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)

	desired, err := crd.Decode(deploy.EtcdClusterCRD)
	if err != nil {
		t.Fatal(err)
	}
	desired.Spec.Group = "e2e-ensure.etcd.operator.dev"
	desired.Name = desired.Spec.Names.Plural + "." + desired.Spec.Group
	desired.Spec.Names.ShortNames = nil
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	t.Cleanup(func() {
		if err := crds.Delete(context.Background(), desired.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting CRD %s: %v", desired.Name, err)
		}
	})
	// A copy left behind by an interrupted run would turn the create into an update.
	if err := crds.Delete(ctx, desired.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting a leftover CRD %s: %v", desired.Name, err)
	}
	if err := framework.Poll(time.Minute, func() (bool, error) {
		_, err := crds.Get(ctx, desired.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	}); err != nil {
		t.Fatalf("waiting for a leftover CRD %s to go: %v", desired.Name, err)
	}

	toYAML := func(c *apiextensionsv1.CustomResourceDefinition) []byte {
		b, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	start := time.Now()
	if err := crd.Ensure(ctx, client, toYAML(desired), log); err != nil {
		t.Fatalf("Ensure (create): %v", err)
	}
	took := time.Since(start)
	t.Logf("created and Established in %v", took)
	if took > 3*time.Second {
		t.Errorf("CRD took %v to be Established, want at most 3s", took)
	}
	created, err := crds.Get(ctx, desired.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if err := crd.Ensure(ctx, client, toYAML(desired), log); err != nil {
		t.Fatalf("Ensure (unchanged): %v", err)
	}
	again, err := crds.Get(ctx, desired.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != created.ResourceVersion {
		t.Errorf("Ensure of an unchanged CRD wrote it: resourceVersion %s -> %s", created.ResourceVersion, again.ResourceVersion)
	}

	changed := desired.DeepCopy()
	changed.Spec.Versions[0].AdditionalPrinterColumns = append(changed.Spec.Versions[0].AdditionalPrinterColumns,
		apiextensionsv1.CustomResourceColumnDefinition{Name: "Paused", Type: "boolean", JSONPath: ".spec.paused"})
	if err := crd.Ensure(ctx, client, toYAML(changed), log); err != nil {
		t.Fatalf("Ensure (update): %v", err)
	}
	updated, err := crds.Get(ctx, desired.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	columns := updated.Spec.Versions[0].AdditionalPrinterColumns
	if updated.ResourceVersion == again.ResourceVersion || columns[len(columns)-1].Name != "Paused" {
		t.Errorf("Ensure of a changed CRD did not update it: resourceVersion %s, columns %v", updated.ResourceVersion, columns)
	}
}

// TestPartialStorageFilledIn: a cluster applied with only a retentionPolicy in spec.storage
// is accepted, and the operator fills in the default claim on its first pass, keeping the
// policy; whenDeleted Delete then takes the claim with the cluster.
func TestPartialStorageFilledIn(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	const name = "partial"
	f.Apply(cluster(name, "  size: 1\n  storage: {retentionPolicy: {whenDeleted: Delete}}\n"))
	f.WaitFor("etcdcluster/"+name, "jsonpath={.spec.storage.volumeClaimTemplate.spec.resources.requests.storage}=4Gi", time.Minute)
	policy := f.MustNS("get", "etcdcluster", name, "-o", "jsonpath={.spec.storage.retentionPolicy.whenDeleted}")
	if policy != "Delete" {
		t.Errorf("retentionPolicy.whenDeleted %q after the operator filled in storage, want Delete", policy)
	}
	f.WaitFor("pvc/data-"+name+"-0", "jsonpath={.status.phase}=Bound", 2*time.Minute)
	waitClaimsFinalizer(f, name, true)
	f.MustNS("delete", "etcdcluster", name, "--wait=false")
	f.Eventually("the claim gone with the cluster (whenDeleted Delete)", 2*time.Minute, func() (bool, error) {
		left := claimUIDs(f, name)
		return len(left) == 0, fmt.Errorf("claims left: %v", left)
	})
}
