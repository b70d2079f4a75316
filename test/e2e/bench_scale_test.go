//go:build e2e

package e2e

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The scale part of the bench (issue 30, docs/scale.md): N clusters of three on claims applied
// at once, each in a namespace of its own, next to the floor of N plain StatefulSets of three
// in the same run; what converging and then idling costs the operator, read from its own
// /metrics; create/delete cycles after which its memory and goroutines must come back; and the
// N clusters again beside one kept unhealthy. N is what the node has room for (chooseN).
const (
	// scaleMembers is the size of every cluster of the run.
	scaleMembers = 3
	// scaleCycles is how many create/delete cycles run.
	scaleCycles = 5
	// scaleIdleDefault is the idle window; E2E_BENCH_SCALE_IDLE shortens it for a quick run.
	scaleIdleDefault = 5 * time.Minute
	// scaleBaselineMax bounds the window that measures the operator before the run's clusters.
	scaleBaselineMax = time.Minute
	// scaleConvergeEvery is how often /metrics is read while clusters converge (for the peaks);
	// scaleIdleEvery while they idle, as seldom as a Prometheus would, since each read costs the
	// operator a little of the CPU being measured.
	scaleConvergeEvery = 2 * time.Second
	scaleIdleEvery     = 15 * time.Second
	// scaleSettleBound is how long the operator's memory and goroutines get to come back once
	// a cycle's clusters are gone: past the Go runtime's forced collection (every two
	// minutes) and its scavenger's return of the freed pages.
	scaleSettleBound = 150 * time.Second
	// scaleProjected is the number of clusters the figures are projected to.
	scaleProjected = 1000
	// scaleStuckName is the cluster kept unhealthy; every other cluster of the run is scaleName.
	scaleStuckName = "stuck"
	scaleName      = "scale"
	mib            = 1 << 20
)

// scaleStuckPod keeps all but one member of a cluster from ever being scheduled, on any
// number of nodes: no two of its members may share a value of kubernetes.io/os, which every
// node has. The seed starts; the members that join never do.
const scaleStuckPod = `  pod:
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector: {matchLabels: {etcd.operator.dev/cluster: ` + scaleStuckName + `}}
          topologyKey: kubernetes.io/os
`

// scaleResults are the figures the targets of issue 30 are judged on.
type scaleResults struct {
	// floor is the N StatefulSets' time to all 3N pods Ready; one a cluster's alone.
	floor, one time.Duration
	// times are the N clusters' times to Available(3), sorted.
	times []time.Duration
	// idle is the operator's load while they idle; peakRSS its highest memory from their
	// apply to the end of the idle window.
	idle    framework.Load
	peakRSS float64
	// cycles is whether memory and goroutines came back after every cycle; retained which
	// heap they compared (scaleRun.retained).
	cycles   bool
	retained string
}

// benchScale measures the scale figures and reports the targets of issue 30.
func benchScale(t *testing.T) {
	s := newScaleRun(t)
	var r scaleResults
	r.floor = s.floor()
	r.one = s.oneCluster()
	r.times, r.idle, r.peakRSS = s.converge(r.floor)
	s.withUnhealthy(r.times)
	r.cycles, r.retained = s.cycles()
	s.targets(r)
}

// floor applies the N StatefulSets at once, each in a namespace of its own, and returns the
// time until all 3N pods are Ready (a pod of the floor is Ready once its etcd answers /health,
// which it does with a leader).
func (s *scaleRun) floor() time.Duration {
	var docs []string
	namespaces := s.namespaces("floor", s.n)
	for _, ns := range namespaces {
		docs = append(docs, s.namespaceManifest(ns, "floor"), inNamespace(etcdStatefulSet, ns))
	}
	start := time.Now()
	s.apply(docs)
	times := s.waitFloorReady(namespaces, start)
	all := times[len(times)-1]
	scaleFigure(s.t, fmt.Sprintf("scale: floor, %d StatefulSets(3) with claims applied at once -> all %d pods Ready", s.n, scaleMembers*s.n), all.Seconds(), "s")
	scaleFigure(s.t, "scale: floor, median StatefulSet -> 3 pods Ready", median(times).Seconds(), "s")
	scaleFigure(s.t, "scale: floor, slowest over median", all.Seconds()/median(times).Seconds(), "x")
	s.deletePart("floor")
	return all
}

// oneCluster returns one cluster's apply -> Available(3) alone, on claims.
func (s *scaleRun) oneCluster() time.Duration {
	d := s.clusters("one", 1, false)[0]
	scaleFigure(s.t, "scale: one cluster alone, apply -> Available(3), claims", d.Seconds(), "s")
	s.deletePart("one")
	return d
}

// converge applies the N clusters at once and measures them and the operator until all are
// Available with three ready members, then the operator while they idle; then deletes them.
// It returns their times, the operator's idle load and its highest memory.
func (s *scaleRun) converge(floor time.Duration) ([]time.Duration, framework.Load, float64) {
	before := s.read()
	watch := s.f.WatchOperatorStats(scaleConvergeEvery)
	defer watch.Stop()
	times := s.clusters("main", s.n, false)
	during, failed, lastErr := watch.Stop()
	after := s.read()
	if failed > 0 {
		s.t.Logf("%d of the readings during convergence failed, the last: %v", failed, lastErr)
	}
	readings := append(append([]framework.OperatorStats{before}, during...), after)
	s.convergeFigures(times, floor, readings)

	s.waitSettled("main")
	idle, idleReadings := s.idleWindow()
	s.projection(idle, s.cachedBytes(s.namespaces("main", 1)[0]))
	peakRSS, _ := s.peaks(append(readings, idleReadings...))
	s.deletePart("main")
	gone := s.read()
	scaleFigure(s.t, "scale: goroutines, after the clusters are deleted", gone.Goroutines, "goroutines")
	scaleFigure(s.t, "scale: resident memory, after the clusters are deleted", gone.RSS/mib, "MiB")
	return times, idle, peakRSS
}

// convergeFigures prints the N clusters' times next to the floor's, and what converging cost
// the operator, from its readings from before the apply to the last cluster Available.
func (s *scaleRun) convergeFigures(times []time.Duration, floor time.Duration, readings []framework.OperatorStats) {
	t := s.t
	all := times[len(times)-1]
	scaleFigure(t, fmt.Sprintf("scale: %d clusters with claims applied at once -> all Available(3)", s.n), all.Seconds(), "s")
	scaleFigure(t, fmt.Sprintf("scale: floor beside it, %d StatefulSets -> all %d pods Ready", s.n, scaleMembers*s.n), floor.Seconds(), "s")
	scaleFigure(t, "scale: median cluster -> Available(3)", median(times).Seconds(), "s")
	scaleFigure(t, "scale: slowest over median (starvation)", all.Seconds()/median(times).Seconds(), "x")

	before, after := readings[0], readings[len(readings)-1]
	w := s.window(before, after, "the convergence")
	rss, goroutines := s.peaks(readings)
	scaleFigure(t, "scale: converge, operator CPU", w.CPUSeconds, "s")
	scaleFigure(t, "scale: converge, operator CPU, share of one core", 100*w.CPUSeconds/w.Seconds, "%")
	scaleFigure(t, "scale: converge, operator resident memory (peak)", rss/mib, "MiB")
	scaleFigure(t, "scale: goroutines, before the clusters", before.Goroutines, "goroutines")
	scaleFigure(t, "scale: goroutines, converging (peak)", goroutines, "goroutines")
	if n, ok := w.RequestsTotal(); ok {
		scaleFigure(t, "scale: converge, API requests", n, "requests")
		scaleFigure(t, "scale: converge, API requests per cluster", n/float64(s.n), "requests")
		t.Logf("API requests while converging, by method: %v", w.Requests)
	} else {
		figureNA(t, "scale: converge, API requests", "requests")
	}
	if w.HasClientsOpened {
		scaleFigure(t, "scale: converge, etcd clients opened", w.ClientsOpened, "clients")
	} else {
		figureNA(t, "scale: converge, etcd clients opened", "clients")
	}
	scaleFigure(t, "scale: converge, passes per cluster per minute", w.Passes/after.Clusters/(w.Seconds/60), "/min")
}

// idleWindow measures the operator while the clusters idle, for the idle window, and returns
// its load and the readings.
func (s *scaleRun) idleWindow() (framework.Load, []framework.OperatorStats) {
	t := s.t
	readings := s.observe(s.idle, scaleIdleEvery)
	first, last := readings[0], readings[len(readings)-1]
	w := s.window(first, last, "the idle window")
	idle := framework.LoadOver(w, last.Clusters, last)
	prefix := fmt.Sprintf("scale: idle %v, %v clusters, ", s.idle, last.Clusters)
	scaleFigure(t, prefix+"operator CPU, share of one core", idle.CPUPercent, "%")
	if _, ok := w.RequestsTotal(); ok {
		scaleFigure(t, prefix+"API requests per second", idle.RequestsPerSecond, "req/s")
		t.Logf("API requests while idle, by method: %v", w.Requests)
	} else {
		figureNA(t, prefix+"API requests per second", "req/s")
	}
	scaleFigure(t, prefix+"passes per cluster per minute", idle.PassesPerSecond*60/last.Clusters, "/min")
	if w.HasClientsOpened {
		scaleFigure(t, prefix+"etcd clients opened per minute", w.ClientsOpened/(w.Seconds/60), "/min")
	} else {
		figureNA(t, prefix+"etcd clients opened per minute", "/min")
	}
	scaleFigure(t, prefix+"operator resident memory", last.RSS/mib, "MiB")
	scaleFigure(t, prefix+"operator heap in use", last.HeapInuse/mib, "MiB")
	scaleFigure(t, prefix+"goroutines", last.Goroutines, "goroutines")
	return idle, readings
}

// projection prints what one cluster adds to the operator's idle load (the idle window's over
// the baseline's, per cluster added) and the load of scaleProjected clusters on that line;
// cached is the bytes of one cluster's objects in the operator's caches.
func (s *scaleRun) projection(idle framework.Load, cached float64) {
	t := s.t
	per, err := framework.PerCluster(idle, s.baseLoad)
	if err != nil {
		t.Fatalf("per cluster: %v", err)
	}
	// An operator that does not count its requests has none to project.
	counted := s.base.Requests != nil
	apiFigure := func(name string, v float64) {
		if counted {
			scaleFigure(t, name, v, "req/s")
		} else {
			figureNA(t, name, "req/s")
		}
	}
	apiFigure("scale: per cluster, idle API requests per second", per.RequestsPerSecond)
	scaleFigure(t, "scale: per cluster, idle CPU, share of one core", per.CPUPercent, "%")
	scaleFigure(t, "scale: per cluster, passes per minute", per.PassesPerSecond*60, "/min")
	scaleFigure(t, "scale: per cluster, operator heap in use", per.HeapInuse/1024, "KiB")
	scaleFigure(t, "scale: per cluster, objects cached (JSON, no managedFields)", cached/1024, "KiB")
	p := framework.Project(s.baseLoad, per, scaleProjected)
	prefix := fmt.Sprintf("scale: projected to %d clusters, ", scaleProjected)
	apiFigure(prefix+"idle API requests per second", p.RequestsPerSecond)
	scaleFigure(t, prefix+"idle CPU, share of one core", p.CPUPercent, "%")
	scaleFigure(t, prefix+"passes per second", p.PassesPerSecond, "/s")
	scaleFigure(t, prefix+"objects cached (JSON)", cached*scaleProjected/mib, "MiB")
	scaleFigure(t, prefix+"operator heap in use", p.HeapInuse/mib, "MiB")
	scaleFigure(t, prefix+"operator resident memory", p.RSS/mib, "MiB")
}

// withUnhealthy applies the N clusters again, with one more kept unhealthy beside them, and
// prints their times next to without (converge's).
func (s *scaleRun) withUnhealthy(without []time.Duration) {
	t := s.t
	times := s.clusters("stuck", s.n, true)
	all := times[len(times)-1]
	prefix := fmt.Sprintf("scale: %d clusters beside one kept unhealthy, ", s.n)
	scaleFigure(t, prefix+"all Available(3)", all.Seconds(), "s")
	scaleFigure(t, prefix+"median", median(times).Seconds(), "s")
	scaleFigure(t, prefix+"slowest over median", all.Seconds()/median(times).Seconds(), "x")
	scaleFigure(t, prefix+"all Available(3), over without it", (all - without[len(without)-1]).Seconds(), "s")
	scaleFigure(t, prefix+"median, over without it", (median(times) - median(without)).Seconds(), "s")
	s.checkStuck()
	s.deletePart("stuck")
}

// cycles creates and deletes a third of N clusters (at least two) scaleCycles times; after
// each, once the operator runs no loop for them, it waits for memory and goroutines to come
// back to the baseline, and prints both. It returns whether they came back every time, and
// which heap it compared.
func (s *scaleRun) cycles() (bool, string) {
	n := max(2, (s.n+2)/3)
	scaleFigure(s.t, "scale: create/delete cycles, clusters per cycle", float64(n), "clusters")
	back, what := true, ""
	for i := 1; i <= scaleCycles; i++ {
		part := fmt.Sprintf("cycle%d", i)
		s.clusters(part, n, false)
		s.deletePart(part)
		r, ok := s.settle()
		back = back && ok
		_, _, what = s.retained(r)
		if r.HasHeapLive {
			scaleFigure(s.t, fmt.Sprintf("scale: cycle %d, live heap over the baseline", i), (r.HeapLive-s.baseLive)/mib, "MiB")
		}
		scaleFigure(s.t, fmt.Sprintf("scale: cycle %d, heap in use over the baseline", i), (r.HeapInuse-s.baseHeap)/mib, "MiB")
		scaleFigure(s.t, fmt.Sprintf("scale: cycle %d, resident memory over the baseline", i), (r.RSS-s.baseRSS)/mib, "MiB")
		scaleFigure(s.t, fmt.Sprintf("scale: cycle %d, goroutines over the baseline", i), r.Goroutines-s.baseGoroutines, "goroutines")
	}
	return back, what
}

// targets reports each target of issue 30 as met or missed.
func (s *scaleRun) targets(r scaleResults) {
	target(fmt.Sprintf("scale: idle CPU <= 1%% of one core: %.2f%% with %v clusters", r.idle.CPUPercent, r.idle.Clusters), r.idle.CPUPercent <= 1)
	limit := 40 + 0.5*r.idle.Clusters
	target(fmt.Sprintf("scale: resident memory <= 40 MiB + 0.5 MiB per cluster (%.1f MiB for %v): peak %.1f MiB", limit, r.idle.Clusters, r.peakRSS/mib),
		r.peakRSS/mib <= limit)
	target(fmt.Sprintf("scale: after each of %d create/delete cycles, %s within 2 MiB of the baseline and goroutines back to it", scaleCycles, r.retained), r.cycles)
	all, bound := r.times[len(r.times)-1], r.floor+2*r.one
	target(fmt.Sprintf("scale: all %d Available within the floor (%d pods Ready, %.1f s) + 2 x one cluster alone (%.1f s) = %.1f s: %.1f s",
		s.n, scaleMembers*s.n, r.floor.Seconds(), r.one.Seconds(), bound.Seconds(), all.Seconds()), all <= bound)
	target(fmt.Sprintf("scale: slowest <= 2 x median: %.1f s, median %.1f s", all.Seconds(), median(r.times).Seconds()), all <= 2*median(r.times))
}

// target prints one target of an issue, met or missed, in a fixed, greppable form; the scale
// part's begin with "scale: " (hack/bench-doc.sh puts them on docs/bench-scale.md, the others
// on docs/bench.md).
func target(desc string, met bool) {
	verdict := "missed"
	if met {
		verdict = "met"
	}
	fmt.Printf("TARGET %s %s\n", desc, verdict)
}

// scaleFigure is figure with three decimals for a value below one: the per-cluster figures
// are small, and the projection multiplies them.
func scaleFigure(t *testing.T, name string, v float64, unit string) {
	t.Helper()
	if math.Abs(v) >= 1 {
		figure(t, name, v, unit)
		return
	}
	fmt.Printf("BENCH %-50s %8.3f %s\n", name, v, unit)
}

// figureNA prints a figure the operator does not export.
func figureNA(t *testing.T, name, unit string) {
	t.Helper()
	fmt.Printf("BENCH %-50s %8s %s\n", name, "n/a", unit)
}

// median is the middle of times, which are sorted.
func median(times []time.Duration) time.Duration { return times[len(times)/2] }

// sorted returns the durations of m, shortest first.
func sorted(m map[string]time.Duration) []time.Duration {
	var out []time.Duration
	for _, d := range m {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// inNamespace puts every object of manifest (a YAML stream whose objects have a top-level
// metadata block) into namespace ns.
func inNamespace(manifest, ns string) string {
	return strings.ReplaceAll(manifest, "\nmetadata:\n", "\nmetadata:\n  namespace: "+ns+"\n")
}
