package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
)

// observePods reads the cluster's member pods from the cache into o.pods, adopting those it
// may (not while paused) and recording the others of a member's name as foreign.
func (r *Reconciler) observePods(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	pods, err := r.deps.Pods.Pods(c.Namespace).List(member.ClusterSelector(c.Name))
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	for _, p := range pods {
		ord, ok := member.Ordinal(c.Name, p.Name)
		switch {
		case !ok:
		case metav1.IsControlledBy(p, c):
			o.pods[ord] = p
		case member.Adoptable(c, p):
			if c.Spec.Paused {
				continue
			}
			adopted, err := r.control.AdoptPod(ctx, c, p)
			if err != nil {
				return err
			}
			o.pods[ord] = adopted
		default:
			o.foreign = append(o.foreign, foreignObject(plan.ForeignPod, p, ord))
		}
	}
	return nil
}

// publishedPods reports which pods their member Service routes to: an endpoint with the
// pod's current address in an EndpointSlice of the Service of the pod's name. An address left
// from an earlier pod of the same name does not count.
func publishedPods(eps []*discoveryv1.EndpointSlice, pods map[int]*corev1.Pod) map[string]bool {
	ips := map[string]string{}
	for _, p := range pods {
		if p.Status.PodIP != "" {
			ips[p.Name] = p.Status.PodIP
		}
	}
	out := map[string]bool{}
	for _, s := range eps {
		name := s.Labels[discoveryv1.LabelServiceName]
		ip, ok := ips[name]
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			if slices.Contains(ep.Addresses, ip) {
				out[name] = true
			}
		}
	}
	return out
}

// podView is the planner's view of one member pod.
func (o *observation) podView(ord int, p *corev1.Pod) plan.PodView {
	t, _ := member.ReadTemplate(o.cluster.Name, p)
	v := plan.PodView{
		Ordinal:         ord,
		Phase:           p.Status.Phase,
		Terminating:     p.DeletionTimestamp != nil,
		Published:       o.published[p.Name],
		Node:            p.Spec.NodeName,
		ClusterState:    t.ClusterState,
		InitialCluster:  t.InitialCluster,
		DataLost:        dataLost(p),
		ForceNewCluster: t.ForceNewCluster,
		MemberID:        t.MemberID,
		Problem:         podProblem(p),
		Version:         t.Version,
		MaxLearners:     t.MaxLearners,
		PeerListen:      t.PeerListen,
		Created:         p.CreationTimestamp.Time,
		Waiting:         etcdWaiting(p),
		RestartPending:  member.RestartPending(p),
		NotReady:        !podReady(p),
	}
	if at, err := time.Parse(time.RFC3339, p.Annotations[member.AnnotationRestartedAt]); err == nil {
		v.RestartedAt = at
	}
	if p.DeletionTimestamp != nil {
		v.DeletionDeadline = p.DeletionTimestamp.Time
	}
	if e, ok := member.ReadEvictionRefusal(p); ok && e.Generation == o.cluster.Generation {
		v.EvictionRefusedSince, v.EvictionRefusal = e.Since, e.Message
	}
	return v
}

// podReady: the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// dataLost reports whether member-init refused to start the pod's etcd because the member's
// data dir is empty while the member has started before.
func dataLost(p *corev1.Pod) bool {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name != member.EtcdContainerName {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
			if t != nil && memberinit.IsDataLostMessage(t.Message) {
				return true
			}
		}
	}
	return false
}
