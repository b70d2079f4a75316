// Package cluster is one EtcdCluster's control loop: each pass observes the cluster (informer
// caches and etcd's own member list), plans at most one step with a pure planner, takes that
// step, and reports status. A pass keeps nothing that decides anything for the next one (its
// etcd clients only, to ask again: etcdclients.go): an operator killed at any instant picks up
// from what the API and etcd say.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/record"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/controller"
	"github.com/etcd-operator/etcd-operator/pkg/dnsutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	versioned "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
	etcdlisters "github.com/etcd-operator/etcd-operator/pkg/generated/listers/etcd/v1alpha1"
)

// ErrGone is returned by Sync when the EtcdCluster no longer exists, or is being deleted and
// carries no finalizer of the operator's any more (retention.go): the controller stops its
// loop. Its owned objects go with it through their ownerReferences; its claims are owned by
// nothing, and are deleted, or kept, as whenDeleted said when it was deleted.
var ErrGone = controller.ErrGone

// How soon a pass asks to run again when no event is expected to wake it.
const (
	// afterAction: etcd-side changes (member added, promoted, removed) raise no Kubernetes
	// event, so look again right away.
	afterAction = 100 * time.Millisecond
	// whileWaiting: a learner catching up or a member starting.
	whileWaiting = 300 * time.Millisecond
	// whileBlocked: a refused step is re-checked without hot-looping.
	whileBlocked = 5 * time.Second
	// whileRotating: a CA rotation waits between two steps on the kubelet (refreshing
	// Secret volumes) or on the pods that mount the client Secret; each look asks the members'
	// ports again.
	whileRotating = 5 * time.Second
	// whileRefused: a create the API server refused (quota, admission) is tried again this
	// late, never in a hot loop; a change to the cluster wakes the pass earlier.
	whileRefused = 30 * time.Second
)

// Deps are what a pass needs; the controller fills them.
type Deps struct {
	// KubeClient is the client of the Kubernetes APIs (pods, claims, Services, ...).
	KubeClient kubernetes.Interface
	// EtcdClusterClient is the client of the operator's own API: EtcdClusters.
	EtcdClusterClient versioned.Interface
	Clusters          etcdlisters.EtcdClusterLister
	// Backups are read for a cluster restored from an EtcdBackup (spec.bootstrap.fromBackup).
	Backups        etcdlisters.EtcdBackupLister
	Pods           corelisters.PodLister
	Services       corelisters.ServiceLister
	EndpointSlices discoverylisters.EndpointSliceLister
	Budgets        policylisters.PodDisruptionBudgetLister
	Claims         corelisters.PersistentVolumeClaimLister
	// Secrets lists the Secrets the operator keeps for clusters' certificates (tls.go).
	Secrets corelisters.SecretLister
	// Leases lists the clusters' installation Leases (installation.go); nil reads them from
	// the API server.
	Leases coordinationlisters.LeaseLister
	// MinLifetime is the shortest leafLifetime honoured; zero means DefaultMinLifetime.
	MinLifetime time.Duration
	// HoldersRefresh is how long a client port keeps trusting its old CA after a CA rotation
	// switched its leaves (plan.RotationInput.HoldersRefresh); zero means
	// plan.DefaultHoldersRefresh.
	HoldersRefresh time.Duration
	// NetworkPolicies lists the clusters' NetworkPolicies (spec.networkPolicy).
	NetworkPolicies networkinglisters.NetworkPolicyLister
	// OperatorPeer is the operator's pods, let in to the members' client port by a
	// cluster's NetworkPolicy; nil when the operator runs outside the cluster.
	OperatorPeer *networkingv1.NetworkPolicyPeer
	Recorder     record.EventRecorder
	Etcd         etcdutil.Factory
	// ProbeTLS asks a member's TLS port what it accepts and serves, for a CA rotation
	// (tls_probe.go); nil dials the member (etcdutil.ProbeTLS).
	ProbeTLS etcdutil.TLSProbe
	// DNS asks cluster DNS whether it serves a member's name yet. nil when the operator
	// cannot ask cluster DNS (it runs outside the cluster): the EndpointSlices are trusted.
	DNS dnsutil.Checker
	// MemberInitImage is the operator's own image, from which joining member pods copy
	// member-init.
	MemberInitImage string
	// Installation names this installation of the operator (its leader Lease's
	// namespace/name): a cluster is driven by one installation at a time (installation.go).
	// Empty: every cluster is driven, with no per-cluster Lease.
	Installation string
	// TakeoverAfter is how long a cluster's Lease goes unrenewed before this installation
	// takes the cluster over; zero means DefaultTakeoverAfter.
	TakeoverAfter time.Duration
	// IdleCheck is how often a steady cluster's members are asked again when nothing wakes
	// its loop (steady.go); zero means DefaultIdleCheck.
	IdleCheck time.Duration
	// Bounds are how long the planner lets a state last before it reports it or acts on it;
	// a zero field is its production default (plan.DefaultBounds).
	Bounds plan.Bounds
	// Passes is told what each pass did, for the per-cluster metrics; nil records nothing.
	Passes PassRecorder
	Log    *logrus.Entry
}

// Reconciler runs passes for any cluster; it holds no per-cluster state that decides anything.
type Reconciler struct {
	deps Deps
	// control makes every change a pass makes, but status and Events (actor.go).
	control actor
	// served only saves DNS questions already answered; nothing is decided from it alone.
	served servedPods
	// conflicts only keeps a foreign object from being reported on every pass.
	conflicts reportedConflicts
	// now is the clock a pass reads its time from.
	now func() time.Time
	// clients are the etcd clients each cluster's passes keep (etcdclients.go).
	clients *etcdClients
	// certs only saves verifying again certificates that did not change (certchecks.go).
	certs certChecks
}

// NewReconciler returns a Reconciler over the given dependencies.
func NewReconciler(d Deps) *Reconciler {
	if d.Log == nil {
		d.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	r := &Reconciler{deps: d, now: time.Now}
	r.clients = newEtcdClients(d.Etcd, conns{secrets: d.Secrets, kube: d.KubeClient}, r.passes())
	r.control = &realActor{kube: d.KubeClient, etcdAPI: d.EtcdClusterClient, clients: r.clients,
		recorder: d.Recorder, log: d.Log, initImage: d.MemberInitImage}
	return r
}

func (r *Reconciler) log(c *api.EtcdCluster) *logrus.Entry {
	return r.deps.Log.WithField("cluster", c.Namespace+"/"+c.Name)
}

// Sync runs one observe → plan → act → status pass for namespace/name and returns when it
// wants to run again even without an event. It returns ErrGone when the cluster was
// deleted. The pass's one State is what both the planner and the status read. The etcd
// clients the pass asked for are kept for the next one; those it did not are closed.
func (r *Reconciler) Sync(ctx context.Context, namespace, name string) (time.Duration, error) {
	defer r.clients.release(namespace, name)
	cached, err := r.deps.Clusters.EtcdClusters(namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		r.forget(namespace + "/" + name)
		return 0, ErrGone
	case err != nil:
		return 0, fmt.Errorf("getting cluster: %w", err)
	case cached.DeletionTimestamp != nil:
		// Nothing is grown, repaired or rolled any more: only the claims are seen to.
		return r.finishDeletion(ctx, cached)
	}
	c := cached.DeepCopy()
	if held, err := r.holdCluster(ctx, c); err != nil || !held {
		// Another installation of the operator drives the cluster (installation.go).
		return r.whenSteady(c), err
	}
	if patched, err := r.syncRetention(ctx, c); err != nil || patched {
		return afterAction, err
	}
	obs, patched, err := r.observeOwned(ctx, c)
	switch {
	case err != nil:
		return 0, err
	case patched:
		return afterAction, nil
	}
	state := obs.state(r.now())
	decision := plan.Plan(state)
	if obs.blind != "" {
		// The planner would take members that were not asked for members that did not answer.
		decision = plan.Decision{Blocked: api.ReasonTLSSecretInvalid, Message: obs.blind}
	}
	if c.Spec.Paused {
		decision = pausedDecision(state, decision)
	}
	decision, requeue, actErr := r.takeDecision(ctx, c, obs, state, decision)
	if err := r.updateStatus(ctx, cached, state, decision); err != nil {
		switch {
		case apierrors.IsConflict(err):
			// The cache has not seen this loop's previous write yet; the status is
			// recomputed from scratch on the next pass, so nothing is lost.
			r.log(c).Debug("status changed meanwhile; recomputing on the next pass")
			requeue = min(requeue, afterAction)
		case actErr == nil:
			actErr = err
		}
	}
	if actErr == nil {
		r.passes().PassSucceeded(namespace, name, r.now())
	}
	return requeue, actErr
}

// takeDecision takes the decision's action, if any, and says when to look again. An action
// the API server refuses becomes a decision that reports the refusal (what status says).
func (r *Reconciler) takeDecision(ctx context.Context, c *api.EtcdCluster, obs *observation, state plan.State,
	decision plan.Decision) (plan.Decision, time.Duration, error) {
	log := r.log(c)
	requeue := r.whenSteady(c)
	var actErr error
	switch {
	case decision.Action != nil:
		requeue, actErr = r.act(ctx, c, obs, decision)
		var evictRefused *evictionRefused
		if msg, refused := refusedByAPIServer(actErr); refused {
			log.WithField("action", string(decision.Action.Kind)).WithError(actErr).Warn("the API server refuses the change")
			decision, requeue, actErr = refusedDecision(decision, msg), whileRefused, nil
		} else if errors.As(actErr, &evictRefused) {
			// The disruption budget allows no disruption now: wait, without a hot loop.
			decision, requeue, actErr = evictionWait(decision, evictRefused), whileBlocked, nil
		} else if actErr == nil {
			decision = evicted(decision)
		}
	case decision.Blocked != "":
		requeue = whileBlocked
	case decision.Progress == api.ReasonRotatingCA:
		requeue = whileRotating
	case decision.Progress != "":
		requeue = whileWaiting
	case !settled(state):
		requeue = min(requeue, whileUnsettled)
	}
	if len(state.RefusedServices) > 0 && decision.Action == nil {
		// Waiting passes would ask for the refused Services every time; a change of the
		// cluster's objects still starts a pass at once.
		log.WithField("services", strings.Join(state.RefusedServices, "; ")).Warn("the API server refuses services")
		requeue = max(requeue, whileRefused)
	}
	return decision, requeue, actErr
}

// observeOwned puts the objects the cluster owns in place (unless it is paused) around
// observing it: spec.storage filled in (patched: the pass ends there, the cluster changed),
// its Services and budget, its claims, the member pods' restart counts as of their last ready
// run (crashloop.go), and the recover-quorum annotation cleared once done.
func (r *Reconciler) observeOwned(ctx context.Context, c *api.EtcdCluster) (obs *observation, patched bool, err error) {
	var foreign []plan.ForeignObject
	var refused []string
	if !c.Spec.Paused {
		if patched, err := r.ensureStorage(ctx, c); err != nil || patched {
			return nil, patched, err
		}
		if foreign, refused, err = r.ensureOwned(ctx, c); err != nil {
			return nil, false, err
		}
	}
	if obs, err = r.observe(ctx, c); err != nil {
		return nil, false, err
	}
	obs.refusedServices = refused
	if !c.Spec.Paused {
		if err := r.ensureMemberServices(ctx, c, obs); err != nil {
			return nil, false, err
		}
	}
	if !c.Spec.Paused {
		if err := r.ensureTLS(ctx, c, obs); err != nil {
			return nil, false, err
		}
		if err := r.recordPeerMove(ctx, c, obs); err != nil {
			return nil, false, err
		}
		checkPeerSchemes(c, obs)
	}
	obs.foreign = append(obs.foreign, foreign...)
	r.reportForeign(c, obs.foreign)
	if !c.Spec.Paused {
		if err := r.syncClaims(ctx, c, obs); err != nil {
			return nil, false, err
		}
		if err := r.recordReadyRestarts(ctx, obs); err != nil {
			return nil, false, err
		}
		if err := r.clearRecoverQuorum(ctx, c, obs); err != nil {
			return nil, false, err
		}
	}
	return obs, false, nil
}

func (r *Reconciler) event(c *api.EtcdCluster, eventType string, reason EventReason, format string, args ...any) {
	if r.deps.Recorder != nil {
		r.deps.Recorder.Eventf(c, eventType, string(reason), format, args...)
	}
}

// pausedDecision is what a paused cluster reports of the planner's decision: no action and
// nothing under way, but what blocks it (the planner's Blocked), or, with no member list
// from a cluster that ran, that no quorum answers, so that Degraded never says nothing is
// wrong while nothing is being repaired.
func pausedDecision(s plan.State, d plan.Decision) plan.Decision {
	switch {
	case d.Blocked != "":
		return plan.Decision{Blocked: d.Blocked, Message: d.Message, Report: d.Report}
	case s.Bootstrapped && !s.MembersKnown:
		return plan.Decision{Blocked: api.ReasonNoQuorum,
			Message: "no member list answers; spec.paused is set, so nothing is restarted or repaired until it is unset"}
	default:
		return plan.Decision{}
	}
}
