package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// The operator reaches members at their pod IPs. A pod IP is reused once the pod is gone, and
// may then answer for another etcd cluster: the cluster ID etcd reports with every answer
// tells them apart. It is recorded once, on the EtcdCluster's AnnotationClusterID, from the
// first member list whose members are the cluster's own (their peer URLs are the cluster's
// names); from then on a member that answers with another cluster ID is not counted as a
// member, is reported, and no membership change is ever sent to it. Until it is recorded (a
// cluster whose members never answered together) there is nothing to compare with, and a
// change is sent as before.

// ForeignEndpoint is the kind of a member pod whose IP answers for another etcd cluster.
const ForeignEndpoint plan.ForeignKind = "EtcdEndpoint"

// recordedClusterID is the cluster ID the cluster recorded; 0 when none is.
func recordedClusterID(c *api.EtcdCluster) uint64 {
	return member.ParseID(c.Annotations[api.AnnotationClusterID])
}

// dropForeignEndpoints removes from the statuses the members that answered for another etcd
// cluster than the recorded one, and reports each.
func (o *observation) dropForeignEndpoints() {
	want := recordedClusterID(o.cluster)
	if want == 0 {
		return
	}
	for ord, st := range o.statuses {
		if st.ClusterID == want {
			continue
		}
		delete(o.statuses, ord)
		p := o.pods[ord]
		o.foreign = append(o.foreign, plan.ForeignObject{Kind: ForeignEndpoint, Name: p.Name, Ordinal: ord,
			UID:   types.UID(fmt.Sprintf("%s/%s/%x", p.UID, p.Status.PodIP, st.ClusterID)),
			Owner: fmt.Sprintf("its IP %s answers for etcd cluster %x, not this cluster's %x", p.Status.PodIP, st.ClusterID, want)})
	}
}

// ownClusterID is the cluster ID of the members that answered at their own pods as the
// members listed under the cluster's names; 0 when none did, or they disagree.
func (o *observation) ownClusterID() uint64 {
	var id uint64
	for _, m := range o.members {
		v := o.memberView(m)
		st, ok := o.statuses[v.Ordinal]
		if v.Ordinal < 0 || !ok || st.ID != m.ID || st.ClusterID == 0 {
			continue
		}
		if id != 0 && st.ClusterID != id {
			return 0
		}
		id = st.ClusterID
	}
	return id
}

// recordClusterID writes the cluster ID on the EtcdCluster the first time its members are
// listed, before any change is planned from that list. A paused cluster is changed in
// nothing: its ID is recorded once it is unpaused, before the first change.
func (r *Reconciler) recordClusterID(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	if c.Spec.Paused || recordedClusterID(c) != 0 || !o.membersKnown {
		return nil
	}
	id := o.ownClusterID()
	if id == 0 {
		return nil
	}
	// The UID keeps the record from landing on a newer cluster of the name.
	if err := r.control.AnnotateCluster(ctx, c, api.AnnotationClusterID, member.FormatID(id)); err != nil {
		return fmt.Errorf("recording the cluster ID: %w", err)
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[api.AnnotationClusterID] = member.FormatID(id)
	r.log(c).WithField("clusterID", member.FormatID(id)).Info("recorded the etcd cluster ID")
	return nil
}

// sameCluster keeps the endpoints whose members answer with the cluster's recorded ID: a
// membership change is sent to nobody else. With no ID recorded, every endpoint is kept.
// It fails with ErrForeignCluster when none is left.
func (m *realActor) sameCluster(ctx context.Context, c *api.EtcdCluster, endpoints []string) ([]string, error) {
	want := recordedClusterID(c)
	if want == 0 || len(endpoints) == 0 {
		return endpoints, nil
	}
	cli, err := m.clients.get(ctx, c, endpoints)
	if err != nil {
		return nil, err
	}
	var kept, foreign []string
	for _, ep := range endpoints {
		st, err := cli.Status(ctx, ep)
		switch {
		case err != nil:
			// Not asked this time: it may be the cluster's and only slow.
		case st.ClusterID == want:
			kept = append(kept, ep)
		default:
			foreign = append(foreign, fmt.Sprintf("%s (cluster %x)", ep, st.ClusterID))
		}
	}
	if len(foreign) > 0 {
		m.log.WithFields(map[string]any{"cluster": c.Namespace + "/" + c.Name, "endpoints": foreign}).
			Warn("members answer for another etcd cluster; no change is sent to them")
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("checking the cluster ID %x of %v (%v): %w", want, endpoints, foreign, etcdutil.ErrForeignCluster)
	}
	return kept, nil
}
