//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// scalePoll is how often the scale run polls what it waits for with a list (namespaces gone,
// clusters settled, memory back): each poll is a list of many objects, or a scrape of the
// operator.
const scalePoll = 2 * time.Second

// clusters applies n clusters of part at once, each in a namespace of its own, with, when
// stuck, the cluster kept unhealthy in one more; it returns, sorted, each of the n clusters'
// time from the apply until status first says it is Available at its generation with three
// ready voting members.
func (s *scaleRun) clusters(part string, n int, stuck bool) []time.Duration {
	var docs []string
	for _, ns := range s.namespaces(part, n) {
		docs = append(docs, s.namespaceManifest(ns, part), s.clusterManifest(scaleName, ns, part, ""))
	}
	if stuck {
		ns := s.namespacePrefix(part) + scaleStuckName
		docs = append(docs, s.namespaceManifest(ns, part), s.clusterManifest(scaleStuckName, ns, part, scaleStuckPod))
	}
	start := time.Now()
	s.apply(docs)
	done := map[string]time.Duration{}
	err := s.f.WatchEtcdClusters(s.selector(part), convergeTimeout(n), func(c *framework.EtcdCluster) (bool, error) {
		if _, seen := done[c.Metadata.Namespace]; !seen && c.Metadata.Name == scaleName {
			if ok, _ := c.InSpec(scaleMembers); ok {
				done[c.Metadata.Namespace] = time.Since(start)
			}
		}
		return len(done) == n, fmt.Errorf("%d of %d clusters Available with %d ready members", len(done), n, scaleMembers)
	})
	if err != nil {
		s.t.Fatalf("%s: %v", part, err)
	}
	return sorted(done)
}

// floorPodStatus is the part of a pod of the floor that waitFloorReady reads.
type floorPodStatus struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Status struct {
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// ready reports whether the pod's Ready condition is True.
func (p *floorPodStatus) ready() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// waitFloorReady follows the floor's pods with one watch and returns, sorted, each namespace's
// time from start until its three pods were first Ready together.
func (s *scaleRun) waitFloorReady(namespaces []string, start time.Time) []time.Duration {
	ready := map[string]map[string]bool{}
	for _, ns := range namespaces {
		ready[ns] = map[string]bool{}
	}
	done := map[string]time.Duration{}
	err := s.f.WatchJSON(convergeTimeout(len(namespaces)), "the floor's pods", func(raw json.RawMessage) (bool, error) {
		var p floorPodStatus
		if err := json.Unmarshal(raw, &p); err != nil {
			return false, err
		}
		pods, ours := ready[p.Metadata.Namespace]
		if ours {
			pods[p.Metadata.Name] = p.ready()
			n := 0
			for _, r := range pods {
				if r {
					n++
				}
			}
			if _, seen := done[p.Metadata.Namespace]; !seen && n == scaleMembers {
				done[p.Metadata.Namespace] = time.Since(start)
			}
		}
		return len(done) == len(namespaces), fmt.Errorf("%d of %d StatefulSets with %d pods Ready", len(done), len(namespaces), scaleMembers)
	}, "get", "pods", "--all-namespaces", "-l", "app=etcd-floor")
	if err != nil {
		s.t.Fatal(err)
	}
	return sorted(done)
}

// waitSettled waits until every cluster of part has had nothing left to change (Progressing
// False, Reconciled), so that the idle window measures clusters that idle.
func (s *scaleRun) waitSettled(part string) {
	s.poll("the clusters of "+part+" settled", 5*time.Minute, func() (bool, error) {
		var list struct {
			Items []framework.EtcdCluster `json:"items"`
		}
		if err := s.f.GetAPI(query("/apis/etcd.operator.dev/v1alpha1/etcdclusters", s.selector(part)), &list); err != nil {
			return false, err
		}
		var busy []string
		for i := range list.Items {
			if list.Items[i].SettledFor(time.Now()) == 0 {
				busy = append(busy, list.Items[i].Metadata.Namespace)
			}
		}
		return len(list.Items) > 0 && len(busy) == 0, fmt.Errorf("%d clusters, not settled: %v", len(list.Items), busy)
	})
}

// deletePart deletes the namespaces of part and waits until they, their volumes and the
// operator's loops of their clusters are gone.
func (s *scaleRun) deletePart(part string) {
	s.f.MustKubectl("delete", "namespace", "-l", s.selector(part), "--wait=false")
	start := time.Now()
	prefix := s.namespacePrefix(part)
	s.poll(part+"'s namespaces, volumes and cluster loops gone", 10*time.Minute, func() (bool, error) {
		var namespaces corev1.NamespaceList
		if err := s.f.GetAPI(query("/api/v1/namespaces", s.selector(part)), &namespaces); err != nil {
			return false, err
		}
		if n := len(namespaces.Items); n > 0 {
			return false, fmt.Errorf("%d namespaces left", n)
		}
		var volumes corev1.PersistentVolumeList
		if err := s.f.GetAPI("/api/v1/persistentvolumes", &volumes); err != nil {
			return false, err
		}
		for _, pv := range volumes.Items {
			// A volume of a class that retains its volumes stays, released, for its admin.
			ref := pv.Spec.ClaimRef
			if ref != nil && strings.HasPrefix(ref.Namespace, prefix) && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
				return false, fmt.Errorf("volume %s of %s/%s left, %s", pv.Name, ref.Namespace, ref.Name, pv.Status.Phase)
			}
		}
		r, err := s.f.ReadOperatorStats()
		if err != nil {
			return false, err
		}
		return r.Clusters <= s.base.Clusters, fmt.Errorf("the operator runs %v cluster loops, %v before the run", r.Clusters, s.base.Clusters)
	})
	scaleFigure(s.t, "scale: "+part+" deleted -> namespaces, volumes and cluster loops gone", time.Since(start).Seconds(), "s")
}

// settle waits, up to scaleSettleBound, until the operator's retained heap (its live heap,
// see retained) is within 2 MiB of the baseline and its goroutines no more than the
// baseline's; it returns the reading that showed it, or the last one and false.
func (s *scaleRun) settle() (framework.OperatorStats, bool) {
	var last framework.OperatorStats
	err := s.pollErr(scaleSettleBound, func() (bool, error) {
		last = s.read()
		s.window(s.base, last, "the cycles")
		now, base, what := s.retained(last)
		back := now <= base+2*mib && last.Goroutines <= s.baseGoroutines
		return back, fmt.Errorf("%s %.1f MiB (baseline %.1f), goroutines %v (baseline %v)",
			what, now/mib, base/mib, last.Goroutines, s.baseGoroutines)
	})
	if err != nil {
		s.t.Logf("not back after %v: %v", scaleSettleBound, err)
	}
	return last, err == nil
}

// checkStuck checks that the cluster kept unhealthy is what it stands for: not Available with
// three ready members, a member pod of it never scheduled. It logs what status says of it.
func (s *scaleRun) checkStuck() {
	ns := s.namespacePrefix("stuck") + scaleStuckName
	var c framework.EtcdCluster
	if err := s.f.GetAPI(fmt.Sprintf("/apis/etcd.operator.dev/v1alpha1/namespaces/%s/etcdclusters/%s", ns, scaleStuckName), &c); err != nil {
		s.t.Fatal(err)
	}
	if ok, _ := c.InSpec(scaleMembers); ok {
		s.t.Errorf("the cluster kept unhealthy is Available with %d ready members: the figures beside it are not what they say", scaleMembers)
	}
	reason, msg := c.ConditionReason("Degraded")
	s.t.Logf("the cluster kept unhealthy: phase %s, %d ready, Degraded %s %s: %s", c.Status.Phase, c.Status.ReadyMembers, c.Condition("Degraded"), reason, msg)
	// The operator may be between removing a learner whose pod cannot start and making it again.
	err := s.pollErr(time.Minute, func() (bool, error) {
		var pods corev1.PodList
		if err := s.f.GetAPI(query(fmt.Sprintf("/api/v1/namespaces/%s/pods", ns), member.LabelCluster+"="+scaleStuckName), &pods); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				return true, nil
			}
		}
		return false, fmt.Errorf("no member pod of the cluster kept unhealthy is unscheduled: %d pods", len(pods.Items))
	})
	if err != nil {
		s.t.Error(err)
	}
}

// cachedBytes is the size, as JSON without managedFields (which the operator's caches drop),
// of the objects of the cluster in ns that the operator's informers cache: the EtcdCluster
// and the objects labelled as managed by the operator of the kinds it watches.
func (s *scaleRun) cachedBytes(ns string) float64 {
	managed := member.ManagedSelector().String()
	paths := []string{fmt.Sprintf("/apis/etcd.operator.dev/v1alpha1/namespaces/%s/etcdclusters", ns)}
	for _, p := range []string{"/api/v1/namespaces/%s/pods", "/api/v1/namespaces/%s/services",
		"/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets",
		"/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies", "/api/v1/namespaces/%s/persistentvolumeclaims",
		"/api/v1/namespaces/%s/secrets"} {
		paths = append(paths, query(fmt.Sprintf(p, ns), managed))
	}
	var total, objects int
	for _, path := range paths {
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := s.f.GetAPI(path, &list); err != nil {
			s.t.Fatal(err)
		}
		for _, item := range list.Items {
			if meta, ok := item["metadata"].(map[string]any); ok {
				delete(meta, "managedFields")
			}
			b, err := json.Marshal(item)
			if err != nil {
				s.t.Fatal(err)
			}
			total += len(b)
			objects++
		}
	}
	s.t.Logf("one cluster's objects in the operator's caches: %d objects, %d bytes", objects, total)
	scaleFigure(s.t, "scale: per cluster, objects cached", float64(objects), "objects")
	return float64(total)
}

// poll calls cond every scalePoll until it holds, and fails the test after timeout.
func (s *scaleRun) poll(desc string, timeout time.Duration, cond func() (bool, error)) {
	s.t.Helper()
	if err := s.pollErr(timeout, cond); err != nil {
		s.t.Fatalf("waiting %v for %s: %v", timeout, desc, err)
	}
}

// pollErr calls cond every scalePoll until it holds, or returns its last error after timeout.
func (s *scaleRun) pollErr(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("condition still false")
			}
			return fmt.Errorf("timed out: %w", err)
		}
		time.Sleep(scalePoll)
	}
}
