package operator

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	etcdfake "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned/fake"

	"github.com/etcd-operator/etcd-operator/deploy"
)

// establishingClient is an apiextensions fake whose created CRDs are established at once, as
// the apiserver would do shortly after.
func establishingClient() *extfake.Clientset {
	ext := extfake.NewSimpleClientset() //nolint:staticcheck // NewClientset cannot track CRDs (see pkg/crd)
	ext.PrependReactor("create", "customresourcedefinitions", func(a k8stesting.Action) (bool, runtime.Object, error) {
		crd := a.(k8stesting.CreateAction).GetObject().(*apiextensionsv1.CustomResourceDefinition)
		now := metav1.Now()
		crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: now},
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: now},
		}
		return false, nil, nil
	})
	return ext
}

// TestOnlyTheLeaderWritesTheCRD: two replicas compete for the Lease, each with its own view of
// the CRDs; the one that leads installs the CRD, the one that stands by never touches it.
func TestOnlyTheLeaderWritesTheCRD(t *testing.T) {
	kube := k8sfake.NewClientset()
	type rep struct {
		ext  *extfake.Clientset
		done chan error
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reps := map[string]*rep{}
	for _, id := range []string{"a", "b"} {
		r := &rep{ext: establishingClient(), done: make(chan error, 1)}
		reps[id] = r
		o := testOptions(id)
		o.Namespace, o.Workers, o.ShutdownGrace, o.MemberInitImage = "db", 1, time.Second, "img"
		o.MetricsAddr, o.HealthAddr = "127.0.0.1:0", "127.0.0.1:0"
		cl := &clients{kube: kube, etcdClusters: etcdfake.NewSimpleClientset(), extension: r.ext}
		go func() { r.done <- runWith(ctx, o, cl, quietLog(), time.Now()) }()
	}

	crdActions := func(r *rep) int { return len(r.ext.Actions()) }
	deadline := time.Now().Add(10 * time.Second)
	for crdActions(reps["a"])+crdActions(reps["b"]) == 0 || leaseHolder(t, kube) == "" {
		if time.Now().After(deadline) {
			t.Fatal("no replica installed the CRD")
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	leader := leaseHolder(t, kube)
	standby := map[string]string{"a": "b", "b": "a"}[leader]
	// The standby keeps retrying the Lease meanwhile: give it several retry periods to misbehave.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n := crdActions(reps[standby]); n != 0 {
			var verbs []string
			for _, a := range reps[standby].ext.Actions() {
				verbs = append(verbs, a.GetVerb())
			}
			t.Fatalf("the standby replica %s made %d CRD requests: %v", standby, n, verbs)
		}
	}
	var created bool
	for _, a := range reps[leader].ext.Actions() {
		created = created || a.GetVerb() == "create"
	}
	if !created {
		t.Errorf("the leader %s did not create the CRD: %v", leader, reps[leader].ext.Actions())
	}
	cancel()
	for id, r := range reps {
		select {
		case <-r.done:
		case <-time.After(15 * time.Second):
			t.Fatalf("replica %s did not stop", id)
		}
	}
}

// installCRDs installs every CRD of its list in turn, each established before the next, and
// none with --skip-crd-install.
func TestInstallCRDsInstallsEachInTurn(t *testing.T) {
	widgets := bytes.ReplaceAll(bytes.ReplaceAll(deploy.EtcdClusterCRD,
		[]byte("etcdclusters"), []byte("etcdwidgets")), []byte("EtcdCluster"), []byte("EtcdWidget"))
	defs := [][]byte{deploy.EtcdClusterCRD, widgets}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ext := establishingClient()
	cl := &clients{extension: ext}
	if err := installCRDs(ctx, &Options{}, cl, defs, quietLog(), time.Now()); err != nil {
		t.Fatalf("installCRDs: %v", err)
	}
	var created []string
	for _, a := range ext.Actions() {
		if a.GetVerb() == "create" {
			created = append(created, a.(k8stesting.CreateAction).GetObject().(*apiextensionsv1.CustomResourceDefinition).Name)
		}
	}
	if want := []string{"etcdclusters.etcd.operator.dev", "etcdwidgets.etcd.operator.dev"}; !slices.Equal(created, want) {
		t.Errorf("created CRDs %v, want %v", created, want)
	}

	skipped := establishingClient()
	if err := installCRDs(ctx, &Options{SkipCRDInstall: true}, &clients{extension: skipped}, defs, quietLog(), time.Now()); err != nil {
		t.Fatalf("installCRDs with --skip-crd-install: %v", err)
	}
	if n := len(skipped.Actions()); n != 0 {
		t.Errorf("installCRDs with --skip-crd-install made %d requests, want none", n)
	}
}

// The operator installs the EtcdCluster CRD, then the EtcdBackup CRD, then the
// EtcdBackupSchedule CRD.
func TestOperatorCRDs(t *testing.T) {
	if len(crds) != 3 || !bytes.Equal(crds[0], deploy.EtcdClusterCRD) || !bytes.Equal(crds[1], deploy.EtcdBackupCRD) ||
		!bytes.Equal(crds[2], deploy.EtcdBackupScheduleCRD) {
		t.Errorf("the operator installs %d CRDs, want the EtcdCluster, EtcdBackup and EtcdBackupSchedule CRDs", len(crds))
	}
}
