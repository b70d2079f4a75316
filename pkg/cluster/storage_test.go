package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan/plantest"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// A spec without storage is filled in on the first pass: claims for a new cluster, the
// emptyDir it runs on for a cluster made before claims existed. Nothing else happens in that
// pass.
func TestSyncFillsInStorage(t *testing.T) {
	deleteAll := &api.RetentionPolicy{WhenDeleted: api.RetentionDelete, WhenScaled: api.RetentionDelete}
	for _, tc := range []struct {
		name      string
		given     *api.StorageSpec
		started   func(*api.EtcdCluster) []*corev1.Pod
		wantClaim bool
		// wantRetention is the retentionPolicy the patch must carry; nil: not checked.
		wantRetention *api.RetentionPolicy
	}{
		{"new cluster", nil, func(*api.EtcdCluster) []*corev1.Pod { return nil }, true, member.DefaultStorage().RetentionPolicy},
		{"cluster that reported members", nil, func(c *api.EtcdCluster) []*corev1.Pod { c.Status.Size = 3; return nil }, false, nil},
		{"cluster that served, its status cleared and its pods gone", nil, func(c *api.EtcdCluster) []*corev1.Pod {
			c.Annotations = map[string]string{api.AnnotationClusterID: "c1"}
			return nil
		}, false, nil},
		{"cluster whose seed pod exists", nil, func(c *api.EtcdCluster) []*corev1.Pod {
			return []*corev1.Pod{memberPod(c, 0, "10.0.0.1", corev1.PodPending, time.Now(), &discoveryv1.EndpointSlice{})}
		}, false, nil},
		{"new cluster given storage {}", &api.StorageSpec{}, func(*api.EtcdCluster) []*corev1.Pod { return nil }, true, member.DefaultStorage().RetentionPolicy},
		{"new cluster given only a retentionPolicy", &api.StorageSpec{RetentionPolicy: deleteAll},
			func(*api.EtcdCluster) []*corev1.Pod { return nil }, true, deleteAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(3)
			c.Spec.Storage = tc.given
			objs := []runtime.Object{c}
			for _, p := range tc.started(c) {
				objs = append(objs, p)
			}
			f := newFixture(t, objs...)
			if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			patches := f.actions("patch", "etcdclusters")
			if len(patches) != 1 {
				t.Fatalf("%d patches of the cluster, want 1", len(patches))
			}
			var got struct {
				Spec     api.EtcdClusterSpec `json:"spec"`
				Metadata metav1.ObjectMeta   `json:"metadata"`
			}
			if err := json.Unmarshal(patches[0].(k8stesting.PatchAction).GetPatch(), &got); err != nil {
				t.Fatal(err)
			}
			if s := got.Spec.Storage; s == nil || (s.VolumeClaimTemplate != nil) != tc.wantClaim || (s.EmptyDir != nil) == tc.wantClaim {
				t.Errorf("storage patched to %+v, want claims: %v", s, tc.wantClaim)
			}
			if tc.wantRetention != nil && (got.Spec.Storage.RetentionPolicy == nil || *got.Spec.Storage.RetentionPolicy != *tc.wantRetention) {
				t.Errorf("retentionPolicy patched to %+v, want %+v", got.Spec.Storage.RetentionPolicy, tc.wantRetention)
			}
			if got.Metadata.UID != c.UID {
				t.Errorf("patch not conditioned on the cluster's UID: %+v", got.Metadata)
			}
			if n := len(f.actions("create", "pods")) + len(f.actions("create", "persistentvolumeclaims")); n != 0 {
				t.Errorf("%d pods or claims created in the pass that filled in storage", n)
			}
		})
	}
}

func TestSyncCreatesSeedClaim(t *testing.T) {
	c := newCluster(3)
	c.Spec.Storage = member.DefaultStorage()
	f := newFixture(t, c)
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	claims := f.actions("create", "persistentvolumeclaims")
	pods := f.actions("create", "pods")
	if len(claims) != 1 || len(pods) != 1 {
		t.Fatalf("created %d claims and %d pods, want the seed's one of each", len(claims), len(pods))
	}
	pvc := claims[0].(k8stesting.CreateAction).GetObject().(*corev1.PersistentVolumeClaim)
	pod := pods[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	if pvc.Name != "data-demo-0" || member.DataClaim(pod) != pvc.Name {
		t.Errorf("claim %s, pod %s keeps its data on %q", pvc.Name, pod.Name, member.DataClaim(pod))
	}
	if len(pvc.OwnerReferences) != 0 {
		t.Errorf("whenDeleted Retain (the default): claim owned by %v", pvc.OwnerReferences)
	}
}

// The claim of a listed member is marked with its ID before anything is planned, and the pod
// of a started member carries the ID for member-init; the claim is not owned by the cluster,
// not even under whenDeleted Delete (retention.go).
func TestSyncMarksClaims(t *testing.T) {
	c := newCluster(1)
	c.Spec.Storage = member.DefaultStorage()
	c.Spec.Storage.RetentionPolicy.WhenDeleted = api.RetentionDelete
	c.Finalizers = []string{api.FinalizerClaims}
	c.Status.Size = 1
	seed := memberPod(c, 0, "10.0.0.1", corev1.PodRunning, time.Now(), &discoveryv1.EndpointSlice{})
	seed.Spec.Volumes = member.Pod(c, member.Template{Ordinal: 0, ClusterState: "new", InitialCluster: []int{0}}, "x").Spec.Volumes
	pvc := member.Claim(c, 0)
	pvc.OwnerReferences = nil
	pvc.UID = "pvc-uid"
	pvc.Status.Phase = corev1.ClaimBound
	f := newFixture(t, c, seed, pvc)
	f.with(func(d *Deps) { d.Etcd = newFakeEtcd(t, c, "10.0.0.1") })
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	got, err := f.kube.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data-demo-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[member.AnnotationMemberID] != "1" {
		t.Errorf("claim annotations %v, want the member ID 1", got.Annotations)
	}
	if len(got.OwnerReferences) != 0 {
		t.Errorf("whenDeleted Delete: claim owners %v, want none", got.OwnerReferences)
	}
	pod, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), seed.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Annotations[member.AnnotationMemberID] != "1" {
		t.Errorf("pod annotations %v, want the member ID 1 for member-init", pod.Annotations)
	}
}

func TestClaimWhy(t *testing.T) {
	// Each event first said sec seconds after plantest.PassAt, and again since.
	at := func(typ, reason, msg string, sec int) corev1.Event {
		first := metav1.NewTime(plantest.PassAt.Add(time.Duration(sec) * time.Second))
		return corev1.Event{Type: typ, Reason: reason, Message: msg, FirstTimestamp: first, LastTimestamp: first}
	}
	noClass := at(corev1.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set", 5)
	notFound := at(corev1.EventTypeWarning, "ProvisioningFailed", `storageclass.storage.k8s.io "fast" not found`, 1)
	external := at(corev1.EventTypeNormal, "ExternalProvisioning", `Waiting for a volume to be created either by the external provisioner "x" or manually by the system administrator`, 9)
	consumer := at(corev1.EventTypeNormal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding", 10)
	scheduling := at(corev1.EventTypeNormal, "WaitForPodScheduled", "waiting for pod m14-0 to be scheduled", 3)
	late, early := plantest.PassAt.Add(time.Minute), plantest.PassAt.Add(20*time.Second)
	for _, tc := range []struct {
		name   string
		events []corev1.Event
		now    time.Time
		want   string
		// bound is the operator's pod bound; zero: the production default.
		bound time.Duration
	}{
		{"none", nil, late, "", 0},
		{"only waiting for its pod", []corev1.Event{consumer}, late, "", 0},
		{"waiting for its pod to be scheduled: the pod's scheduler message says why", []corev1.Event{consumer, scheduling}, late, "", 0},
		{"no StorageClass set and none is the default (a Normal event)", []corev1.Event{noClass, consumer}, late, "FailedBinding: no persistent volumes available", 0},
		{"the provisioner does not answer", []corev1.Event{consumer, external}, late, `ExternalProvisioning: Waiting for a volume to be created either by the external provisioner "x"`, 0},
		{"a Normal event said for less than the pods' bound: only slow so far", []corev1.Event{consumer, external}, early, "", 0},
		{"the same, past the shorter bound the operator was started with", []corev1.Event{consumer, external}, early,
			`ExternalProvisioning: Waiting for a volume`, 10 * time.Second},
		{"a Warning, at once", []corev1.Event{external, notFound}, early, `ProvisioningFailed`, 0},
		{"a Warning wins over a later Normal event", []corev1.Event{external, notFound}, late, `ProvisioningFailed: storageclass.storage.k8s.io "fast" not found`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := claimWhy(tc.events, tc.now, plan.Bounds{StuckAfter: tc.bound}.WithDefaults().StuckAfter)
			if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
				t.Errorf("claimWhy = %q, want %q", got, tc.want)
			}
		})
	}
}

// A member seen voting on etcd 3.7 through the pod that mounts its claim has that recorded on
// its claim before anything is planned (member.AnnotationDataRanOn), once: the next pass, over
// the claim as written, writes nothing. A member on 3.6, or a claim that holds another
// member's data, is left unmarked.
func TestSyncRecordsDataRanOn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  string
		markedBy string
		want     string
	}{
		{"a member on 3.7", "3.7.3", "1", "3.7"},
		{"a member on 3.6", "3.6.16", "1", ""},
		{"a claim marked with another member", "3.7.3", "2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(1)
			c.Spec.Storage = member.DefaultStorage()
			c.Status.Size = 1
			seed := memberPod(c, 0, "10.0.0.1", corev1.PodRunning, time.Now(), &discoveryv1.EndpointSlice{})
			seed.Spec.Volumes = member.Pod(c, member.Template{Ordinal: 0, ClusterState: "new", InitialCluster: []int{0}}, "x").Spec.Volumes
			pvc := member.Claim(c, 0)
			pvc.UID = "pvc-uid"
			pvc.Status.Phase = corev1.ClaimBound
			pvc.Annotations[member.AnnotationMemberID] = tc.markedBy
			pass := func(claim *corev1.PersistentVolumeClaim) *fixture {
				f := newFixture(t, c, seed, claim)
				etcd := newFakeEtcd(t, c, "10.0.0.1")
				etcd.status[member.PodClientURL("10.0.0.1", member.ClientTLS(c))] = etcdutil.Status{ID: 1, Leader: 1, Version: tc.version, RaftIndex: 500, RaftAppliedIndex: 500}
				f.with(func(d *Deps) { d.Etcd = etcd })
				if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
					t.Fatalf("Sync: %v", err)
				}
				return f
			}
			f := pass(pvc)
			got, err := f.kube.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), pvc.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Annotations[member.AnnotationDataRanOn] != tc.want {
				t.Errorf("claim annotations %v, want %s=%q", got.Annotations, member.AnnotationDataRanOn, tc.want)
			}
			if n := len(f.actions("patch", "persistentvolumeclaims")); (n == 1) != (tc.want != "") || n > 1 {
				t.Errorf("%d patches of the claim in the first pass", n)
			}
			if again := pass(got); len(again.actions("patch", "persistentvolumeclaims")) != 0 {
				t.Errorf("the next pass patched the claim again: %v", again.actions("patch", "persistentvolumeclaims"))
			}
		})
	}
}

// A claim that records its data ran on 3.7 has the record cleared, before anything is
// planned, once its data may run on a release older than 3.6: the pass builds member pods with
// 3.5 (a downgrade from 3.6), the pod on the claim is built with 3.5, or its member answers
// with 3.5 (on its way up again: it must be replaced, not restarted, on 3.7). Data that runs
// on 3.6 keeps it.
func TestSyncClearsDataRanOn(t *testing.T) {
	for _, tc := range []struct {
		name              string
		spec, pod, answer string
		// downgrade is the downgrade etcd has enabled, as the member answers.
		downgrade string
		cleared   bool
	}{
		{"a member downgraded to 3.5, answering", "3.5.21", "3.5.21", "3.5.21", "", true},
		{"a member on 3.5 that does not answer, going up to 3.6", "3.6.16", "3.5.21", "", "", true},
		{"the pass builds pods with 3.5 (downgrade enabled), the member still on 3.6", "3.5.21", "3.6.16", "3.6.16", "3.5.0", true},
		{"a member on 3.6", "3.6.16", "3.6.16", "3.6.16", "", false},
		{"a member on 3.7", "3.7.3", "3.7.3", "3.7.3", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(1)
			c.Spec.Storage = member.DefaultStorage()
			c.Status.Size = 1
			built := c.DeepCopy()
			built.Spec.Version = tc.pod
			c.Spec.Version = tc.spec
			seed := memberPod(built, 0, "10.0.0.1", corev1.PodRunning, time.Now(), &discoveryv1.EndpointSlice{})
			seed.Spec.Volumes = member.Pod(c, member.Template{Ordinal: 0, ClusterState: "new", InitialCluster: []int{0}}, "x").Spec.Volumes
			pvc := member.Claim(c, 0)
			pvc.UID = "pvc-uid"
			pvc.Status.Phase = corev1.ClaimBound
			pvc.Annotations[member.AnnotationMemberID] = "1"
			pvc.Annotations[member.AnnotationDataRanOn] = "3.7"
			f := newFixture(t, c, seed, pvc)
			etcd := newFakeEtcd(t, c, "10.0.0.1")
			delete(etcd.status, member.PodClientURL("10.0.0.1", member.ClientTLS(c)))
			if tc.answer != "" {
				etcd.status[member.PodClientURL("10.0.0.1", member.ClientTLS(c))] = etcdutil.Status{ID: 1, Leader: 1, Version: tc.answer, DowngradeTarget: tc.downgrade, RaftIndex: 500, RaftAppliedIndex: 500}
			}
			f.with(func(d *Deps) { d.Etcd = etcd })
			if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			got, err := f.kube.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), pvc.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, kept := got.Annotations[member.AnnotationDataRanOn]; kept == tc.cleared {
				t.Errorf("claim annotations %v, want %s cleared: %v", got.Annotations, member.AnnotationDataRanOn, tc.cleared)
			}
		})
	}
}
