package plugin

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdtest"
	etcdfake "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned/fake"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

const (
	testNamespace = "default"
	testCluster   = "example"
)

// testNow is the clock of every test Env.
var testNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// fakeForwarder maps member pods to the addresses of embedded etcd members, as a port-forward
// maps them to local ports; a pod it has no address for is refused, as the API server refuses
// a forward to a pod that is gone.
type fakeForwarder struct {
	mu    sync.Mutex
	addrs map[string]string
	asked []string
}

func (f *fakeForwarder) Forward(_ context.Context, pod *corev1.Pod, port int32) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, pod.Name)
	if port != member.ClientPort {
		return "", fmt.Errorf("forward to port %d, want the client port", port)
	}
	addr, ok := f.addrs[pod.Name]
	if !ok {
		return "", fmt.Errorf("port-forwarding to pod %s: error upgrading connection: pod not found", pod.Name)
	}
	return addr, nil
}

func (f *fakeForwarder) Close() {}

// syncBuffer is an output buffer that commands and the test's goroutines share; changed is
// signalled at every write, for a fake operator that waits for a progress line.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor returns once the buffer holds s, or fails the test at the deadline.
func (b *syncBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !strings.Contains(b.String(), s) {
		select {
		case <-b.changed:
		case <-deadline:
			t.Errorf("output never said %q: %q", s, b.String())
			return
		}
	}
}

// testEnv is an Env over fake clientsets holding objs (EtcdClusters and EtcdBackups in the
// generated one, the rest in the core one), and fwd.
type testEnv struct {
	*Env
	kube        *kubefake.Clientset
	etcd        *etcdfake.Clientset
	fwd         *fakeForwarder
	out, errOut *syncBuffer
}

func newTestEnv(objs ...runtime.Object) *testEnv {
	var core, custom []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *api.EtcdCluster, *api.EtcdBackup:
			custom = append(custom, o)
		default:
			core = append(core, o)
		}
	}
	e := &testEnv{
		kube: kubefake.NewClientset(core...), etcd: etcdfake.NewSimpleClientset(custom...),
		fwd: &fakeForwarder{addrs: map[string]string{}}, out: newSyncBuffer(), errOut: newSyncBuffer(),
	}
	e.Env = &Env{
		Kube: e.kube, Etcd: e.etcd, Namespace: testNamespace, Forwarder: e.fwd, Out: e.out, ErrOut: e.errOut,
		Now: func() time.Time { return testNow }, DialTimeout: time.Second, CallTimeout: 5 * time.Second,
	}
	return e
}

// run runs kubectl etcd with args on the Env, as the command line would.
func (e *testEnv) run(args ...string) error {
	root := newRoot(func() (*Env, error) { return e.Env, nil })
	root.SetArgs(args)
	root.SetOut(e.out)
	root.SetErr(e.errOut)
	return root.ExecuteContext(context.Background())
}

func testClusterObj(size int32) *api.EtcdCluster {
	return &api.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: testCluster, Namespace: testNamespace},
		Spec:       api.EtcdClusterSpec{Size: size, Version: "3.6.16"},
	}
}

// runningPod is the pod of the member of the given ordinal, running with its etcd ready, on
// node.
func runningPod(ordinal int, node string) *corev1.Pod {
	name := member.Name(testCluster, ordinal)
	labels := member.ClusterLabels(testCluster)
	labels[member.LabelMember] = name
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: member.EtcdContainerName, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			}},
		},
	}
}

// pendingPod is the pod of the member of the given ordinal, its etcd container waiting.
func pendingPod(ordinal int, reason string) *corev1.Pod {
	p := runningPod(ordinal, "")
	p.Status.Phase = corev1.PodPending
	p.Status.ContainerStatuses[0].Ready = false
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	return p
}

// startEtcd starts n embedded members named as the cluster's members and has the Env's
// forwarder reach each member pod's client port at its member.
func (e *testEnv) startEtcd(t *testing.T, n int, configure func(*embed.Config)) []*etcdtest.Member {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = member.Name(testCluster, i)
	}
	members := etcdtest.StartNamedCluster(t, names, configure)
	for _, m := range members {
		u, err := url.Parse(m.ClientURL)
		if err != nil {
			t.Fatal(err)
		}
		e.fwd.addrs[m.Name] = u.Host
	}
	return members
}

// leaderName is the member that leads, as etcd itself says.
func leaderName(t *testing.T, members []*etcdtest.Member) string {
	t.Helper()
	for _, m := range members {
		if m.Etcd.Server.Leader() == m.Etcd.Server.MemberID() {
			return m.Name
		}
	}
	t.Fatal("no member leads")
	return ""
}
