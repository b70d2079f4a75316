package cluster

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// Two installations of the operator (the cluster-wide one and a namespaced one) may both see
// an EtcdCluster. Each installation elects one leader among its own replicas, but the two
// leaders would both act on the cluster. So each cluster has a Lease of its own, in its
// namespace, named <cluster>-operator and owned by the cluster: the installation named in it
// (its leader Lease's namespace/name) drives the cluster, renewing it now and then; any other
// installation leaves the cluster alone (no pass, no status write) and says so once with a
// Warning Event. An installation that is gone for good does not hold the cluster forever:
// once its Lease has gone unrenewed for the takeover bound (DefaultTakeoverAfter, or the
// operator's flag; the longer of the holder's, written in the Lease, and the taker's), another
// installation takes the cluster over and says so. An installation that comes back after that finds the cluster
// taken and leaves it alone.

// DefaultTakeoverAfter is how long a cluster's Lease must go unrenewed before another
// installation takes the cluster over: long enough for an operator's rollout or restart.
const DefaultTakeoverAfter = 5 * time.Minute

// installationLeaseName is the name of the cluster's Lease.
func installationLeaseName(cluster string) string { return cluster + "-operator" }

// holdCluster reports whether this installation drives the cluster: it holds the cluster's
// Lease, taking it when there is none or when its holder stopped renewing it. With no
// installation identity (Deps.Installation empty) every cluster is driven. The Lease is read
// from the cache; one about to be written (renewed, taken over) is read again from the API
// server first, so that the write carries its latest resourceVersion.
func (r *Reconciler) holdCluster(ctx context.Context, c *api.EtcdCluster) (bool, error) {
	me := r.deps.Installation
	if me == "" {
		return true, nil
	}
	lease, cached, err := r.lease(ctx, c, false)
	if err == nil && cached {
		if held, renew := r.judgeLease(c, lease); !renew {
			return held, nil
		}
		lease, _, err = r.lease(ctx, c, true)
	}
	switch {
	case err != nil:
		return false, err
	case lease == nil:
		// Not created: another installation was first, and this pass looks again.
		return r.control.CreateLease(ctx, r.installationLease(c, me, r.now()))
	}
	if held, renew := r.judgeLease(c, lease); !renew {
		return held, nil
	}
	return r.renewLease(ctx, c, lease, r.now())
}

// lease is the cluster's Lease, nil when there is none: from the cache (cached) unless
// fresh, and from the API server when the cache has not seen it (one made a moment ago).
func (r *Reconciler) lease(ctx context.Context, c *api.EtcdCluster, fresh bool) (lease *coordinationv1.Lease, cached bool, err error) {
	name := installationLeaseName(c.Name)
	if r.deps.Leases != nil && !fresh {
		lease, err := r.deps.Leases.Leases(c.Namespace).Get(name)
		switch {
		case err == nil:
			return lease, true, nil
		case !apierrors.IsNotFound(err):
			return nil, false, fmt.Errorf("getting lease %s from the cache: %w", name, err)
		}
	}
	lease, err = r.deps.KubeClient.CoordinationV1().Leases(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("getting lease %s: %w", name, err)
	}
	return lease, false, nil
}

// judgeLease says whether this installation holds the cluster by lease, and whether it must
// renew the lease to hold it (it holds it, renewed a while ago, or takes it over).
func (r *Reconciler) judgeLease(c *api.EtcdCluster, lease *coordinationv1.Lease) (held, renew bool) {
	me := r.deps.Installation
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	var renewed time.Time
	if lease.Spec.RenewTime != nil {
		renewed = lease.Spec.RenewTime.Time
	}
	now, takeover := r.now(), r.takeoverAfter()
	switch {
	case holder == me && now.Sub(renewed) < takeover/3:
		return true, false
	case holder == me:
	case holder != "" && now.Sub(renewed) < staleAfter(lease, takeover):
		if r.conflicts.report(conflictKey(c, "Installation", holder), types.UID(holder)) {
			r.log(c).WithFields(map[string]any{"holder": holder, "self": me}).
				Warn("another installation of the operator drives this cluster; leaving it alone")
			r.event(c, corev1.EventTypeWarning, EventInstallationConflict,
				"Installation %s drives this cluster (lease %s); installation %s leaves it alone, and takes it over only if that lease goes unrenewed for %s",
				holder, lease.Name, me, staleAfter(lease, takeover))
		}
		return false, false
	}
	return false, true
}

// renewLease renews the cluster's Lease for this installation, taking it over from its
// holder when that is another installation. The update carries the resourceVersion read: of
// two installations taking over at once, one wins; the other does not hold the cluster.
func (r *Reconciler) renewLease(ctx context.Context, c *api.EtcdCluster, lease *coordinationv1.Lease, now time.Time) (bool, error) {
	me := r.deps.Installation
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	upd := lease.DeepCopy()
	upd.Spec.RenewTime = &metav1.MicroTime{Time: now}
	// Every renewal says how long this installation's takeover bound is: another one, with a
	// shorter bound, waits for this one's.
	upd.Spec.LeaseDurationSeconds = ptr.To(int32(r.takeoverAfter() / time.Second))
	if holder != me {
		upd.Spec.HolderIdentity = ptr.To(me)
		upd.Spec.AcquireTime = &metav1.MicroTime{Time: now}
		upd.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	}
	if updated, err := r.control.UpdateLease(ctx, upd); err != nil || !updated {
		return false, err
	}
	if holder != me {
		r.log(c).WithFields(map[string]any{"from": holder, "self": me}).Warn("took the cluster over")
		r.event(c, corev1.EventTypeWarning, EventInstallationTakeover,
			"Installation %s takes this cluster over from %s, whose lease %s went unrenewed for %s", me, holder, lease.Name, staleAfter(lease, r.takeoverAfter()))
	}
	return true, nil
}

func (r *Reconciler) takeoverAfter() time.Duration {
	if r.deps.TakeoverAfter > 0 {
		return r.deps.TakeoverAfter
	}
	return DefaultTakeoverAfter
}

// staleAfter is how long lease must go unrenewed before another installation may take the
// cluster over: the longer of the bound its holder wrote in it (LeaseDurationSeconds, the
// holder's --cluster-takeover-after) and ours (takeover). Two installations started with
// different bounds then never judge each other by the shorter one.
func staleAfter(lease *coordinationv1.Lease, takeover time.Duration) time.Duration {
	if s := lease.Spec.LeaseDurationSeconds; s != nil && time.Duration(*s)*time.Second > takeover {
		return time.Duration(*s) * time.Second
	}
	return takeover
}

// installationLease is the cluster's Lease, held by installation me from now; it goes with
// the cluster.
func (r *Reconciler) installationLease(c *api.EtcdCluster, me string, now time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: installationLeaseName(c.Name), Namespace: c.Namespace,
			Labels: member.ClusterLabels(c.Name), OwnerReferences: []metav1.OwnerReference{member.OwnerReference(c)}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(me),
			LeaseDurationSeconds: ptr.To(int32(r.takeoverAfter() / time.Second)),
			AcquireTime:          &metav1.MicroTime{Time: now},
			RenewTime:            &metav1.MicroTime{Time: now},
		},
	}
}
