package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// noQuorumEtcd is an etcd without quorum: the members reached answer a status request, by
// client URL, and nobody answers the member list.
type noQuorumEtcd struct {
	status map[string]etcdutil.Status
}

func (e noQuorumEtcd) New([]string, etcdutil.ConnConfig) (etcdutil.Client, error) {
	return noQuorumClient{answeringClient{&answeringEtcd{err: errors.New("etcdserver: request timed out")}}, e}, nil
}

type noQuorumClient struct {
	answeringClient
	e noQuorumEtcd
}

func (c noQuorumClient) Status(_ context.Context, endpoint string) (etcdutil.Status, error) {
	st, ok := c.e.status[endpoint]
	if !ok {
		return etcdutil.Status{}, errors.New("connection refused")
	}
	return st, nil
}

// survivorOfThree is a cluster of three on claims that status lists whole, whose members
// demo-1 and demo-2 lost their claims: demo-0 answers alone on its claim, raft index 42.
func survivorOfThree(t *testing.T, recoverFrom string) (*fixture, *api.EtcdCluster, *corev1.Pod) {
	c := newCluster(3)
	c.Spec.Storage = member.DefaultStorage()
	c.Status.Size = 3
	for o := range 3 {
		c.Status.Members = append(c.Status.Members, api.MemberStatus{Name: member.Name(c.Name, o), ID: hexID(uint64(o + 1))})
	}
	if recoverFrom != "" {
		c.Annotations = map[string]string{api.AnnotationRecoverQuorum: recoverFrom}
	}
	pod := memberPod(c, 0, "10.0.0.1", corev1.PodRunning, time.Now(), &discoveryv1.EndpointSlice{})
	pod.Spec.Volumes = member.Pod(c, member.Template{Ordinal: 0}, "x").Spec.Volumes
	pvc := member.Claim(c, 0)
	pvc.Annotations = map[string]string{member.AnnotationMemberID: "1"}
	pvc.Status.Phase = corev1.ClaimBound
	f := newFixture(t, c, pod, pvc, member.PeerService(c), member.ClientService(c))
	f.with(func(d *Deps) {
		d.Etcd = noQuorumEtcd{status: map[string]etcdutil.Status{member.PodClientURL("10.0.0.1", member.ClientTLS(c)): {ID: 1, RaftIndex: 42, RaftTerm: 3}}}
	})
	return f, c, pod
}

func (f *fixture) sync() {
	f.t.Helper()
	f.kube.ClearActions()
	f.client.ClearActions()
	if _, err := f.r.Sync(context.Background(), "ns", "demo"); err != nil {
		f.t.Fatalf("Sync: %v", err)
	}
}

func (f *fixture) events() string {
	var out []string
	for len(f.recorder.Events) > 0 {
		out = append(out, <-f.recorder.Events)
	}
	return strings.Join(out, "\n")
}

// annotationPatched is the value the pass's patches of the cluster gave the recover-quorum
// annotation: nil when none touched it, a pointer to "" when one removed it.
func (f *fixture) annotationPatched() *string {
	for _, a := range f.actions("patch", "etcdclusters") {
		var p struct {
			Metadata struct {
				UID         string             `json:"uid"`
				Annotations map[string]*string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &p); err != nil {
			f.t.Fatal(err)
		}
		if p.Metadata.UID == "" {
			f.t.Errorf("patch of the cluster without a UID precondition: %s", a.(k8stesting.PatchAction).GetPatch())
		}
		if v, ok := p.Metadata.Annotations[api.AnnotationRecoverQuorum]; ok {
			if v == nil {
				empty := ""
				return &empty
			}
			return v
		}
	}
	return nil
}

// The recovery, pass by pass, from the annotation "highest" to the survivor's pod made again
// with --force-new-cluster.
func TestSyncRecoversFromSurvivor(t *testing.T) {
	f, c, pod := survivorOfThree(t, api.RecoverFromHighest)

	// The survivor with the highest raft index is chosen and written down, with an Event.
	f.sync()
	if got := f.annotationPatched(); got == nil || *got != "demo-0" {
		t.Fatalf("annotation patched to %v, want demo-0", got)
	}
	if ev := f.events(); !strings.Contains(ev, "Warning QuorumRecovery") || !strings.Contains(ev, "demo-0") || !strings.Contains(ev, "raft index 42") {
		t.Errorf("events %q, want a Warning naming demo-0 and its raft index", ev)
	}
	if n := len(f.actions("delete", "pods")) + len(f.actions("create", "pods")); n != 0 {
		t.Errorf("%d pod changes in the pass that chose the survivor", n)
	}

	// Its pod is deleted, that very pod.
	chosen := c.DeepCopy()
	chosen.Annotations[api.AnnotationRecoverQuorum] = "demo-0"
	_ = f.cinf.Etcd().V1alpha1().EtcdClusters().Informer().GetIndexer().Update(chosen)
	f.sync()
	deletes := f.actions("delete", "pods")
	if len(deletes) != 1 || deletes[0].(k8stesting.DeleteAction).GetName() != "demo-0" ||
		*deletes[0].(k8stesting.DeleteAction).GetDeleteOptions().Preconditions.UID != pod.UID {
		t.Fatalf("pod deletes %v, want demo-0 with its UID", deletes)
	}
	if ev := f.events(); !strings.Contains(ev, "Warning ForceNewCluster") || !strings.Contains(ev, "raft index 42") {
		t.Errorf("events %q, want a Warning ForceNewCluster with the raft index", ev)
	}

	// Once it is gone, it is made again with --force-new-cluster, and nothing else is.
	_ = f.kinf.Core().V1().Pods().Informer().GetIndexer().Delete(pod)
	f.sync()
	creates := f.actions("create", "pods")
	if len(creates) != 1 {
		t.Fatalf("%d pods created, want the survivor's", len(creates))
	}
	made := creates[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	tmpl, _ := member.ReadTemplate(c.Name, made)
	if made.Name != "demo-0" || !tmpl.ForceNewCluster || tmpl.MemberID != 1 {
		t.Fatalf("created %s from %+v, want demo-0 with --force-new-cluster and its member ID", made.Name, tmpl)
	}

	// While it starts, nothing more is done, and no second survivor is made.
	_ = f.kinf.Core().V1().Pods().Informer().GetIndexer().Add(made)
	f.sync()
	if n := len(f.actions("create", "pods")) + len(f.actions("delete", "pods")) + len(f.actions("patch", "etcdclusters")); n != 0 {
		t.Errorf("%d changes while the survivor starts", n)
	}
}

// Manual without the annotation: the loss is reported, nothing is changed.
func TestSyncReportsQuorumLost(t *testing.T) {
	f, _, _ := survivorOfThree(t, "")
	f.sync()
	if n := len(f.actions("create", "pods")) + len(f.actions("delete", "pods")) + len(f.actions("patch", "etcdclusters")); n != 0 {
		t.Errorf("%d changes without the annotation", n)
	}
	updates := f.actions("update", "etcdclusters")
	if len(updates) != 1 {
		t.Fatalf("%d status writes, want 1", len(updates))
	}
	st := updates[0].(k8stesting.UpdateAction).GetObject().(*api.EtcdCluster).Status
	var deg *metav1.Condition
	for i := range st.Conditions {
		if st.Conditions[i].Type == string(api.ConditionDegraded) {
			deg = &st.Conditions[i]
		}
	}
	if deg == nil || deg.Reason != string(api.ReasonQuorumLost) ||
		!strings.Contains(deg.Message, "kubectl annotate etcdcluster -n ns demo etcd.operator.dev/recover-quorum=demo-0") {
		t.Errorf("Degraded = %+v, want QuorumLost with the command", deg)
	}
	if ev := f.events(); !strings.Contains(ev, "Warning ClusterDegraded") {
		t.Errorf("events %q, want the loss reported", ev)
	}
}

// Once etcd lists members again, and status lists them too, the annotation is removed: it
// asked for one recovery. Not while status still lists the members from before the loss: a
// lost status write would otherwise leave a later pass planning from them with no annotation
// to hold it to the same survivor.
func TestSyncRemovesRecoverQuorumOnceMembersAnswer(t *testing.T) {
	c := newCluster(1)
	c.Status.Size = 3
	c.Status.Members = []api.MemberStatus{{Name: "demo-0", ID: "1"}, {Name: "demo-1", ID: "2"}, {Name: "demo-2", ID: "3"}}
	c.Annotations = map[string]string{api.AnnotationRecoverQuorum: "demo-0"}
	seed := memberPod(c, 0, "10.0.0.1", corev1.PodRunning, time.Now(), &discoveryv1.EndpointSlice{})
	f := newFixture(t, c, seed, member.PeerService(c), member.ClientService(c))
	f.with(func(d *Deps) { d.Etcd = newFakeEtcd(t, c, "10.0.0.1") })
	f.sync()
	if got := f.annotationPatched(); got != nil {
		t.Errorf("annotation patched to %q while status still lists the members before the loss", *got)
	}

	c.Status.Size, c.Status.Members = 1, []api.MemberStatus{{Name: "demo-0", ID: "1"}}
	f = newFixture(t, c, seed, member.PeerService(c), member.ClientService(c))
	f.with(func(d *Deps) { d.Etcd = newFakeEtcd(t, c, "10.0.0.1") })
	f.sync()
	if got := f.annotationPatched(); got == nil || *got != "" {
		t.Errorf("annotation patched to %v, want it removed", got)
	}
	if ev := f.events(); !strings.Contains(ev, "QuorumRecovered") {
		t.Errorf("events %q, want the removal said", ev)
	}
	// Without quorum it stays: the recovery it asks for is not done.
	f, _, _ = survivorOfThree(t, "demo-0")
	f.sync()
	if got := f.annotationPatched(); got != nil {
		t.Errorf("annotation patched to %q without quorum", *got)
	}
}

// A survivor whose claim was never marked (the operator died before it could) has it marked
// before its pod goes: without its pod answering, the mark is what says the data is its own.
func TestSyncMarksSurvivorClaimBeforeForcing(t *testing.T) {
	f, _, _ := survivorOfThree(t, "demo-0")
	pvc, err := f.kube.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data-demo-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Annotations = nil
	_ = f.kinf.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Update(pvc)
	if _, err := f.kube.CoreV1().PersistentVolumeClaims("ns").Update(context.Background(), pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if n := len(f.actions("delete", "pods")); n != 1 {
		t.Fatalf("%d pods deleted, want the survivor's", n)
	}
	got, err := f.kube.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data-demo-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[member.AnnotationMemberID] != "1" {
		t.Errorf("survivor's claim annotations %v, want its member ID", got.Annotations)
	}
}
