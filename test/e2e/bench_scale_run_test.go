//go:build e2e

package e2e

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// Labels of the scale run's namespaces and clusters: the run, and the part of it.
const (
	scaleLabel     = "e2e-bench-scale"
	scalePartLabel = "e2e-bench-scale-part"
)

// scaleRun is one run of the scale bench: its clusters' namespaces are
// e2e-scale-<id>-<part>-<i>, labelled with the run and the part.
type scaleRun struct {
	t    *testing.T
	f    *framework.Framework
	id   string
	n    int
	idle time.Duration
	// base is the reading before the run's first object; baseLoad the operator's load over
	// the baseline window, with the clusters that were there before the run; baseRSS and
	// baseGoroutines the highest of that window's readings, which the cycles come back to.
	base                    framework.OperatorStats
	baseLoad                framework.Load
	baseRSS, baseGoroutines float64
	// baseHeap is the highest Go heap in use of that window, baseLive the highest live heap
	// (what a collection kept). The cycles compare the live heap: the resident memory goes
	// back to the kernel only minutes after a collection freed it, and the heap in use holds
	// garbage until the collector's pace reaches it, so that a leak, not the scavenger's or
	// the collector's pace, is what they measure. An operator that does not export its live
	// heap is compared by its heap in use.
	baseHeap, baseLive float64
}

// retained is what the cycles compare with the baseline: r's live heap where the operator
// exports it, else its heap in use, and the baseline's of the same.
func (s *scaleRun) retained(r framework.OperatorStats) (now, base float64, what string) {
	if r.HasHeapLive {
		return r.HeapLive, s.baseLive, "live heap"
	}
	return r.HeapInuse, s.baseHeap, "heap in use"
}

// newScaleRun waits for the namespaces earlier parts deleted to go, chooses N, and measures
// the baseline.
func newScaleRun(t *testing.T) *scaleRun {
	f := framework.New(t)
	requireOperator(t, f)
	s := &scaleRun{t: t, f: f, id: f.Namespace[strings.LastIndex(f.Namespace, "-")+1:], idle: scaleIdleDefault}
	if v := os.Getenv("E2E_BENCH_SCALE_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("E2E_BENCH_SCALE_IDLE=%q: want a duration such as 1m (%v)", v, err)
		}
		s.idle = d
	}
	t.Cleanup(s.cleanup)
	s.waitEarlierNamespaces()
	s.n = s.chooseN()
	s.baseline()
	return s
}

// waitEarlierNamespaces waits, for a bounded time, until no namespace is terminating: the
// parts before this one delete theirs without waiting, and their pods would take room and CPU
// from this one's.
func (s *scaleRun) waitEarlierNamespaces() {
	err := framework.Poll(5*time.Minute, func() (bool, error) {
		var list corev1.NamespaceList
		if err := s.f.GetAPI("/api/v1/namespaces", &list); err != nil {
			return false, err
		}
		var left []string
		for _, ns := range list.Items {
			if ns.Status.Phase == corev1.NamespaceTerminating {
				left = append(left, ns.Name)
			}
		}
		return len(left) == 0, fmt.Errorf("namespaces terminating: %v", left)
	})
	if err != nil {
		s.t.Logf("going on with namespaces still terminating (their pods count as used): %v", err)
	}
}

// scaleCap bounds N on a large node: the run's length grows with N, and a thousand clusters
// are projected, not run.
const scaleCap = 20

// chooseN returns how many clusters the run applies at once: as many as the schedulable
// nodes have room for (pods below maxPods, CPU and memory not yet requested, by the requests
// of a member pod), less one for the cluster kept unhealthy, and no more than scaleCap; or
// E2E_BENCH_SCALE_N when set (and it fits). The default StorageClass's provisioner is named:
// it sets no number (a claim on local-path reserves nothing) but makes every volume in turn.
func (s *scaleRun) chooseN() int {
	t := s.t
	room, err := s.nodeRoom()
	if err != nil {
		t.Fatalf("reading the nodes' room: %v", err)
	}
	// Left to local-path's helper pods, one per volume made or deleted.
	const sparePods = 6
	room.Pods -= sparePods
	// A member pod's other container, the install init container, requests less than etcd's.
	req := framework.Room{MilliCPU: member.DefaultRequests.Cpu().MilliValue(), Memory: member.DefaultRequests.Memory().Value()}
	fit, err := framework.ClustersThatFit(room, req, scaleMembers)
	if err != nil {
		t.Fatal(err)
	}
	scaleFigure(t, "scale: a member pod's requests, CPU", float64(req.MilliCPU), "m")
	scaleFigure(t, "scale: a member pod's requests, memory", float64(req.Memory)/mib, "MiB")
	scaleFigure(t, "scale: room left, CPU not requested", float64(room.MilliCPU), "m")
	scaleFigure(t, "scale: room left, memory not requested", float64(room.Memory)/mib, "MiB")
	scaleFigure(t, fmt.Sprintf("scale: room left, pods below maxPods (less %d spare)", sparePods), float64(room.Pods), "pods")
	for _, by := range []string{"pods", "cpu", "memory"} {
		scaleFigure(t, "scale: clusters of 3 that fit, by "+by, float64(fit.By[by]), "clusters")
	}
	s.logProvisioner()
	if v := os.Getenv("E2E_BENCH_SCALE_N"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > fit.Clusters-1 {
			t.Fatalf("E2E_BENCH_SCALE_N=%q: want 2 to %d, what fits beside the cluster kept unhealthy (%v)", v, fit.Clusters-1, err)
		}
		t.Logf("N = %d (E2E_BENCH_SCALE_N): %d clusters fit, limited by %s", n, fit.Clusters, fit.Limit())
		scaleFigure(t, "scale: N, clusters applied at once (E2E_BENCH_SCALE_N)", float64(n), "clusters")
		return n
	}
	// The cluster kept unhealthy runs beside the N others.
	fit = fit.With("the bench's cap", scaleCap+1)
	n := fit.Clusters - 1
	if n < 2 {
		t.Fatalf("room for %d clusters (%+v, limited by %s): too few to measure", fit.Clusters, fit.By, fit.Limit())
	}
	t.Logf("N = %d: %d clusters fit, limited by %s, one left for the cluster kept unhealthy", n, fit.Clusters, fit.Limit())
	scaleFigure(t, fmt.Sprintf("scale: N, clusters applied at once (%d fit, by %s; one left)", fit.Clusters, fit.Limit()), float64(n), "clusters")
	return n
}

// nodeRoom is the room the schedulable nodes have left, each node's counted from its
// allocatable resources less the requests of the pods bound to it that have not ended.
func (s *scaleRun) nodeRoom() (framework.Room, error) {
	var nodes corev1.NodeList
	if err := s.f.GetAPI("/api/v1/nodes", &nodes); err != nil {
		return framework.Room{}, err
	}
	var pods corev1.PodList
	if err := s.f.GetAPI("/api/v1/pods", &pods); err != nil {
		return framework.Room{}, err
	}
	used := map[string]framework.Room{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		cpu, mem := podRequests(p)
		used[p.Spec.NodeName] = used[p.Spec.NodeName].Add(framework.Room{MilliCPU: cpu, Memory: mem, Pods: 1})
	}
	var room framework.Room
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !schedulable(n) {
			continue
		}
		a, u := n.Status.Allocatable, used[n.Name]
		room = room.Add(framework.Room{
			MilliCPU: max(0, a.Cpu().MilliValue()-u.MilliCPU),
			Memory:   max(0, a.Memory().Value()-u.Memory),
			Pods:     max(0, a.Pods().Value()-u.Pods),
		})
	}
	return room, nil
}

// podRequests is what the scheduler counts for a pod: the larger of its containers' requests
// together and of its largest init container's, plus its overhead.
func podRequests(p *corev1.Pod) (milliCPU, memory int64) {
	for _, c := range p.Spec.Containers {
		milliCPU += c.Resources.Requests.Cpu().MilliValue()
		memory += c.Resources.Requests.Memory().Value()
	}
	for _, c := range p.Spec.InitContainers {
		milliCPU = max(milliCPU, c.Resources.Requests.Cpu().MilliValue())
		memory = max(memory, c.Resources.Requests.Memory().Value())
	}
	return milliCPU + p.Spec.Overhead.Cpu().MilliValue(), memory + p.Spec.Overhead.Memory().Value()
}

// schedulable reports whether a member pod, which tolerates no taint, may land on n.
func schedulable(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, taint := range n.Spec.Taints {
		if taint.Effect == corev1.TaintEffectNoSchedule || taint.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// logProvisioner names the default StorageClass's provisioner.
func (s *scaleRun) logProvisioner() {
	var classes struct {
		Items []struct {
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Provisioner       string `json:"provisioner"`
			VolumeBindingMode string `json:"volumeBindingMode"`
		} `json:"items"`
	}
	if err := s.f.GetAPI("/apis/storage.k8s.io/v1/storageclasses", &classes); err != nil {
		s.t.Logf("reading the StorageClasses: %v", err)
		return
	}
	for _, c := range classes.Items {
		if c.Metadata.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			s.t.Logf("default StorageClass %s: provisioner %s, binding %s", c.Metadata.Name, c.Provisioner, c.VolumeBindingMode)
		}
	}
}

// baseline measures the operator before the run's first object, for the idle window or a
// minute, whichever is shorter.
func (s *scaleRun) baseline() {
	d := min(s.idle, scaleBaselineMax)
	readings := s.observe(d, scaleIdleEvery)
	first, last := readings[0], readings[len(readings)-1]
	w := s.window(first, last, "the baseline window")
	s.base = first
	s.baseLoad = framework.LoadOver(w, last.Clusters, last)
	s.baseRSS, s.baseGoroutines = s.peaks(readings)
	for _, r := range readings {
		s.baseHeap, s.baseLive = max(s.baseHeap, r.HeapInuse), max(s.baseLive, r.HeapLive)
	}
	prefix := fmt.Sprintf("scale: baseline %v, %v clusters, ", d, last.Clusters)
	scaleFigure(s.t, prefix+"operator CPU, share of one core", s.baseLoad.CPUPercent, "%")
	if _, ok := w.RequestsTotal(); ok {
		scaleFigure(s.t, prefix+"API requests per second", s.baseLoad.RequestsPerSecond, "req/s")
	} else {
		figureNA(s.t, prefix+"API requests per second", "req/s")
	}
	scaleFigure(s.t, prefix+"operator resident memory (highest)", s.baseRSS/mib, "MiB")
	scaleFigure(s.t, prefix+"goroutines (highest)", s.baseGoroutines, "goroutines")
}

// observe reads the operator every `every` for d, and once more at the end. The window is
// what is measured: nothing waits on it.
func (s *scaleRun) observe(d, every time.Duration) []framework.OperatorStats {
	first := s.read()
	w := s.f.WatchOperatorStats(every)
	defer w.Stop()
	time.Sleep(d)
	readings, failed, err := w.Stop()
	if failed > 0 {
		s.t.Logf("%d of the readings failed, the last: %v", failed, err)
	}
	return append(append([]framework.OperatorStats{first}, readings...), s.read())
}

// read reads the operator's /metrics, retrying for a minute (the API server's proxy may time
// out on a loaded node).
func (s *scaleRun) read() framework.OperatorStats {
	var r framework.OperatorStats
	s.f.Eventually("a reading of the operator's /metrics", time.Minute, func() (bool, error) {
		var err error
		r, err = s.f.ReadOperatorStats()
		return err == nil, err
	})
	return r
}

// window is the window from a to b; the operator must not have restarted in between.
func (s *scaleRun) window(a, b framework.OperatorStats, what string) framework.Window {
	w, err := a.Until(b)
	if err != nil {
		s.t.Fatalf("over %s: %v", what, err)
	}
	return w
}

// peaks are the highest resident memory and goroutines of readings, which must all be of one
// process.
func (s *scaleRun) peaks(readings []framework.OperatorStats) (rss, goroutines float64) {
	for _, r := range readings {
		s.window(readings[0], r, "the readings")
		rss, goroutines = max(rss, r.RSS), max(goroutines, r.Goroutines)
	}
	return rss, goroutines
}

// cleanup deletes the run's namespaces, also when the run failed (after printing its
// clusters): up to 3N member pods left behind would load every test after it.
func (s *scaleRun) cleanup() {
	run := scaleLabel + "=" + s.id
	if s.t.Failed() {
		out, err := s.f.Kubectl("get", "etcdclusters", "--all-namespaces", "-l", run, "-o", "wide")
		s.t.Logf("the run's clusters (%v):\n%s", err, out)
	}
	if _, err := s.f.Kubectl("delete", "namespace", "-l", run, "--wait=false"); err != nil {
		s.t.Logf("deleting the run's namespaces: %v", err)
	}
}

// selector selects the namespaces and clusters of part.
func (s *scaleRun) selector(part string) string {
	return fmt.Sprintf("%s=%s,%s=%s", scaleLabel, s.id, scalePartLabel, part)
}

// namespacePrefix begins the name of every namespace of part.
func (s *scaleRun) namespacePrefix(part string) string {
	return fmt.Sprintf("e2e-scale-%s-%s-", s.id, part)
}

// namespaces are the names of the n namespaces of part.
func (s *scaleRun) namespaces(part string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", s.namespacePrefix(part), i)
	}
	return out
}

// namespaceManifest is a namespace of part.
func (s *scaleRun) namespaceManifest(ns, part string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels: {%s: %q, %s: %q}\n", ns, scaleLabel, s.id, scalePartLabel, part)
}

// clusterManifest is the example cluster (three members, default storage: claims) named name
// in ns, with spec lines extra.
func (s *scaleRun) clusterManifest(name, ns, part, extra string) string {
	meta := fmt.Sprintf("name: %s\n  namespace: %s\n  labels: {%s: %q, %s: %q}", name, ns, scaleLabel, s.id, scalePartLabel, part)
	return strings.TrimRight(strings.Replace(exampleManifest(s.t), "name: example", meta, 1), "\n") + "\n" + extra
}

// apply applies docs with one kubectl apply: every object at once, as a user's apply of a
// folder would.
func (s *scaleRun) apply(docs []string) {
	s.t.Helper()
	if _, err := s.f.KubectlStdin(strings.Join(docs, "\n---\n"), "apply", "-f", "-"); err != nil {
		s.t.Fatal(err)
	}
}

// convergeTimeout bounds the wait for n clusters, or StatefulSets, to be ready.
func convergeTimeout(n int) time.Duration { return 5*time.Minute + time.Duration(n)*20*time.Second }

// query is path with the label selector sel.
func query(path, sel string) string { return path + "?labelSelector=" + url.QueryEscape(sel) }
