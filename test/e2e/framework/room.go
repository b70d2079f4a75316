package framework

import (
	"fmt"
	"sort"
	"strings"
)

// Room is what nodes have left for more pods, in the scheduler's terms: CPU (millicores) and
// memory (bytes) not requested by the pods that run there, and pods below the kubelet's
// maxPods.
type Room struct {
	MilliCPU, Memory, Pods int64
}

// Add is r and o together: the room of two nodes.
func (r Room) Add(o Room) Room {
	return Room{MilliCPU: r.MilliCPU + o.MilliCPU, Memory: r.Memory + o.Memory, Pods: r.Pods + o.Pods}
}

// Fit is how many clusters fit into some room, and what each resource alone would allow.
type Fit struct {
	// Clusters is the fewest of By.
	Clusters int
	// By is how many clusters each resource (pods, cpu, memory) leaves room for.
	By map[string]int
}

// Limit names the resources that allow no more than Clusters.
func (f Fit) Limit() string {
	var names []string
	for name, n := range f.By {
		if n == f.Clusters {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// ClustersThatFit is how many clusters of members pods each, each pod requesting member's
// CPU and memory, fit into room. A resource member does not request does not limit.
func ClustersThatFit(room, member Room, members int) (Fit, error) {
	if members <= 0 {
		return Fit{}, fmt.Errorf("%d members per cluster", members)
	}
	by := map[string]int{}
	for _, r := range []struct {
		name       string
		have, each int64
	}{
		{"pods", room.Pods, 1},
		{"cpu", room.MilliCPU, member.MilliCPU},
		{"memory", room.Memory, member.Memory},
	} {
		if r.each <= 0 {
			continue
		}
		by[r.name] = int(max(0, r.have/(r.each*int64(members))))
	}
	return fewest(by), nil
}

// With is f with one more limit: no more than n clusters, for the reason name.
func (f Fit) With(name string, n int) Fit {
	by := map[string]int{name: n}
	for k, v := range f.By {
		by[k] = v
	}
	return fewest(by)
}

// fewest is the Fit of the limits by: the fewest clusters any of them allows.
func fewest(by map[string]int) Fit {
	fit := Fit{Clusters: -1, By: by}
	for _, n := range by {
		if fit.Clusters < 0 || n < fit.Clusters {
			fit.Clusters = n
		}
	}
	return fit
}
