package cluster

// What becomes of the members' claims when the cluster is deleted.
//
// The claims are never owned by the EtcdCluster: an ownerReference decides a claim's fate when
// it is written, and the garbage collector acts on it whatever spec.storage.retentionPolicy
// says by the time the cluster goes (a switch to Retain followed by a delete before the next
// pass, or while the operator is down, would lose every claim). Instead, while whenDeleted is
// Delete the cluster carries the finalizer api.FinalizerClaims. The API server then keeps a
// deleted cluster until the operator has read its spec as it is at that moment: under Delete
// the operator deletes the cluster's claims, under Retain it leaves them, and then it removes
// the finalizer. Under Retain (or with emptyDir) the cluster carries no finalizer, so a switch
// to Retain holds from the moment it is written, and so does a deletion with the operator
// down. The member pods and the other objects the cluster owns still go with it through their
// ownerReferences, once the finalizer is gone.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/status"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// whyClaimDeleted is the reason given for each claim deleted with its cluster.
const whyClaimDeleted = "the cluster is deleted and spec.storage.retentionPolicy.whenDeleted is Delete"

// wantsClaimsFinalizer: the cluster keeps data on claims and whenDeleted is Delete.
func wantsClaimsFinalizer(c *api.EtcdCluster) bool {
	return member.HasClaims(&c.Spec) && member.Retention(&c.Spec).WhenDeleted == api.RetentionDelete
}

func hasClaimsFinalizer(c *api.EtcdCluster) bool {
	return slices.Contains(c.Finalizers, api.FinalizerClaims)
}

// syncRetention puts the finalizer and the claims' ownership where whenDeleted wants them, in
// an order that is safe if the operator stops at any instant, for a new cluster as for one
// whose claims an earlier operator made owned: under Delete the finalizer is added first
// (until then an owned claim still goes with the cluster, as Delete says); then every claim
// the cluster owns is disowned; then, under Retain, the finalizer is removed (while a claim is
// still owned, the finalizer keeps a deleted cluster until finishDeletion has disowned it).
// It runs on paused clusters too: it changes nothing a member runs on. patched: the cluster's
// finalizers were written, and the pass ends there.
func (r *Reconciler) syncRetention(ctx context.Context, c *api.EtcdCluster) (patched bool, err error) {
	want, has := wantsClaimsFinalizer(c), hasClaimsFinalizer(c)
	if want && !has {
		done, err := r.control.SetClaimsFinalizer(ctx, c, true)
		if done {
			r.log(c).WithField("finalizer", api.FinalizerClaims).Info("whenDeleted is Delete: the cluster waits for its claims to be deleted when it is deleted")
		}
		return true, err
	}
	// The cache is enough here: a claim the cluster owns was made with its labels.
	claims, err := r.clusterClaims(ctx, c, false)
	if err != nil {
		return false, err
	}
	if err := r.disownClaims(ctx, c, claims); err != nil {
		return false, err
	}
	if !want && has {
		_, err := r.control.SetClaimsFinalizer(ctx, c, false)
		return true, err
	}
	return false, nil
}

// clusterClaims are the cluster's member claims, by ordinal: those in the cache (labelled for
// it), and, with ask, those of the ordinals it has or had members at that only the API shows
// (not in the cache yet, or stripped of their labels), each the cluster's (claimIsOurs, or
// marked with its member: lookClaims). Other claims of a member's name are left out: they are
// not the cluster's to keep or delete.
func (r *Reconciler) clusterClaims(ctx context.Context, c *api.EtcdCluster, ask bool) (map[int]*corev1.PersistentVolumeClaim, error) {
	o := &observation{cluster: c, claims: map[int]*corev1.PersistentVolumeClaim{}}
	cached, err := r.deps.Claims.PersistentVolumeClaims(c.Namespace).List(member.ClusterSelector(c.Name))
	if err != nil {
		return nil, fmt.Errorf("listing claims: %w", err)
	}
	for _, pvc := range cached {
		if ord, ok := claimOrdinal(c, pvc); ok && claimIsOurs(c, pvc) {
			o.claims[ord] = pvc
		}
	}
	if !ask || !member.HasClaims(&c.Spec) {
		return o.claims, nil
	}
	var ordinals []int
	for ord := range max(int(c.Spec.Size), len(c.Status.Members)) {
		ordinals = append(ordinals, ord)
	}
	if err := r.lookClaims(ctx, c, o, ordinals); err != nil {
		return nil, err
	}
	return o.claims, nil
}

// disownClaims drops the cluster from the owners of every claim of its that still has it
// there (made by an operator from before claims were never owned). A claim being deleted is
// left: it goes anyway.
func (r *Reconciler) disownClaims(ctx context.Context, c *api.EtcdCluster, claims map[int]*corev1.PersistentVolumeClaim) error {
	for _, ord := range slices.Sorted(maps.Keys(claims)) {
		pvc := claims[ord]
		if pvc.DeletionTimestamp != nil || !slices.ContainsFunc(pvc.OwnerReferences, func(ref metav1.OwnerReference) bool {
			return ref.UID == c.UID
		}) {
			continue
		}
		if err := r.control.DisownClaim(ctx, c, pvc); err != nil {
			return err
		}
	}
	return nil
}

// finishDeletion is the pass of a cluster being deleted. It grows, repairs and rolls nothing:
// with the finalizer api.FinalizerClaims, it reads whenDeleted as the spec says now, deletes
// the cluster's claims under Delete (disowns any it still owns under Retain, or when the
// cluster is deleted with its dependents orphaned: its pods keep running), then removes the
// finalizer; the member pods then go with the cluster. A claim whose deletion the API server
// refuses keeps the finalizer, and status says so, until it can be deleted or whenDeleted says
// Retain. It returns ErrGone once there is nothing left to do: the loop stops.
func (r *Reconciler) finishDeletion(ctx context.Context, cached *api.EtcdCluster) (time.Duration, error) {
	key := cached.Namespace + "/" + cached.Name
	if !hasClaimsFinalizer(cached) {
		r.forget(key)
		return 0, ErrGone
	}
	c := cached.DeepCopy()
	if other, err := r.drivenElsewhere(ctx, c); err != nil || other {
		return r.whenSteady(c), err
	}
	claims, err := r.clusterClaims(ctx, c, true)
	if err != nil {
		return 0, err
	}
	deleting := wantsClaimsFinalizer(c)
	// Deleted with --cascade=orphan (propagationPolicy Orphan): the garbage collector keeps
	// the member pods running, each on its claim; deleting the claims would take their data
	// from under them. They are kept, as under Retain.
	orphan := slices.Contains(c.Finalizers, metav1.FinalizerOrphanDependents)
	if deleting && orphan {
		deleting = false
		r.log(c).Info("cluster deleted with its dependents orphaned: its claims are kept whatever whenDeleted says")
	}
	if deleting {
		if refused, err := r.deleteClaims(ctx, c, claims); err != nil || refused != "" {
			if err == nil {
				err = r.reportDeletionWait(ctx, cached, refused)
			}
			return whileRefused, err
		}
	} else if err := r.disownClaims(ctx, c, claims); err != nil {
		return 0, err
	}
	if done, err := r.control.SetClaimsFinalizer(ctx, c, false); err != nil || !done {
		return afterAction, err
	}
	if !deleting && len(claims) > 0 {
		names := make([]string, 0, len(claims))
		for _, ord := range slices.Sorted(maps.Keys(claims)) {
			names = append(names, claims[ord].Name)
		}
		why := "whenDeleted is Retain"
		if orphan {
			why = "the cluster was deleted with its dependents orphaned (--cascade=orphan), so its member pods keep running on them"
		}
		r.log(c).WithField("claims", strings.Join(names, ",")).Info("cluster deleted; its claims are kept")
		r.event(c, corev1.EventTypeNormal, EventClaimsRetained, "%s: claims %s are kept; an EtcdCluster of the same name uses them again",
			why, strings.Join(names, ", "))
	}
	r.forget(key)
	return 0, ErrGone
}

// deleteClaims deletes every claim of the cluster's not being deleted yet. A claim a pod that
// is not the cluster's has the member's name of is kept (it is that pod's, now). refused is
// the API server's refusal to delete a claim, "" when none refused.
func (r *Reconciler) deleteClaims(ctx context.Context, c *api.EtcdCluster, claims map[int]*corev1.PersistentVolumeClaim) (refused string, err error) {
	for _, ord := range slices.Sorted(maps.Keys(claims)) {
		pvc := claims[ord]
		if pvc.DeletionTimestamp != nil {
			continue
		}
		if pod, err := r.deps.Pods.Pods(c.Namespace).Get(member.Name(c.Name, ord)); err == nil && !metav1.IsControlledBy(pod, c) {
			r.log(c).WithFields(map[string]any{"claim": pvc.Name, "pod": pod.Name}).Warn("claim kept: a pod that is not the cluster's has the member's name")
			continue
		}
		_, err := r.control.DeleteClaim(ctx, c, pvc, whyClaimDeleted)
		if msg, ok := refusedByAPIServer(err); ok {
			r.log(c).WithField("claim", pvc.Name).WithError(err).Warn("the API server refuses to delete the claim; the cluster waits")
			return fmt.Sprintf("the API server refuses to delete claim %s: %s", pvc.Name, msg), nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", nil
}

// reportDeletionWait writes, when it changed, the status of a cluster whose deletion waits
// for a claim the API server refuses to delete, and records a Warning Event when it starts
// saying so.
func (r *Reconciler) reportDeletionWait(ctx context.Context, cached *api.EtcdCluster, refused string) error {
	st := status.Deleting(cached, refused)
	if equality.Semantic.DeepEqual(st, cached.Status) {
		return nil
	}
	prev := meta.FindStatusCondition(cached.Status.Conditions, string(api.ConditionDegraded))
	c := cached.DeepCopy()
	c.Status = st
	_, err := r.deps.EtcdClusterClient.EtcdV1alpha1().EtcdClusters(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("updating status: %w", err)
	}
	if deg := meta.FindStatusCondition(st.Conditions, string(api.ConditionDegraded)); prev == nil || prev.Message != deg.Message {
		r.event(c, corev1.EventTypeWarning, EventClaimDeletionRefused, "%s", deg.Message)
	}
	return nil
}

// drivenElsewhere reports whether another installation of the operator holds the cluster's
// Lease, renewed within the takeover bound (staleAfter: its holder's, if longer than ours): the cleanup is then that installation's. The pass
// of a cluster being deleted creates and renews no Lease (its namespace may be being deleted
// too, where nothing can be created); the cleanup is idempotent, so two installations that
// both made it would do the same thing.
func (r *Reconciler) drivenElsewhere(ctx context.Context, c *api.EtcdCluster) (bool, error) {
	me := r.deps.Installation
	if me == "" {
		return false, nil
	}
	lease, _, err := r.lease(ctx, c, false)
	if err != nil || lease == nil {
		return false, err
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" || holder == me || lease.Spec.RenewTime == nil {
		return false, nil
	}
	return r.now().Sub(lease.Spec.RenewTime.Time) < staleAfter(lease, r.takeoverAfter()), nil
}

// forget drops what the reconciler keeps of a cluster that is gone, and closes its etcd
// clients.
func (r *Reconciler) forget(key string) {
	r.served.set(key, nil)
	r.conflicts.forget(key)
	namespace, name, _ := strings.Cut(key, "/")
	r.clients.forget(namespace, name)
	r.passes().Forget(namespace, name)
}

// Forget drops what the reconciler keeps of the cluster namespace/name: its loop has ended
// (controller.Forgetter), the cluster deleted, or this replica no longer leading.
func (r *Reconciler) Forget(namespace, name string) {
	r.forget(namespace + "/" + name)
}
