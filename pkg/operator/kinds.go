package operator

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/backup"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
	"github.com/etcd-operator/etcd-operator/pkg/clustermetrics"
	"github.com/etcd-operator/etcd-operator/pkg/controller"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/schedule"

	"github.com/etcd-operator/etcd-operator/deploy"
)

// crds are the CustomResourceDefinitions of the kinds the operator runs, as YAML, installed
// in this order, each established before the next.
var crds = [][]byte{deploy.EtcdClusterCRD, deploy.EtcdBackupCRD, deploy.EtcdBackupScheduleCRD}

// tlsDefaultPolicy is the admission policy, and its binding, that gives an EtcdCluster created
// without spec.tls peer TLS, installed after the CRDs.
var tlsDefaultPolicy = deploy.TLSDefaultPolicy

// clusterKindName, backupKindName and scheduleKindName are the kinds, as their objects'
// ownerReferences name them.
const (
	clusterKindName  = "EtcdCluster"
	backupKindName   = "EtcdBackup"
	scheduleKindName = schedule.KindName
)

// loopGauges are the loop gauges of every kind the operator runs, one per kind.
var loopGauges = []controller.LoopGauge{{
	Kind: clusterKindName,
	Name: "etcd_operator_clusters_managed",
	Help: "EtcdClusters that currently have a control loop in this operator.",
}, {
	Kind: backupKindName,
	Name: "etcd_operator_backups_managed",
	Help: "EtcdBackups that currently have a control loop in this operator.",
}, {
	Kind: scheduleKindName,
	Name: "etcd_operator_backup_schedules_managed",
	Help: "EtcdBackupSchedules that currently have a control loop in this operator.",
}}

// metrics are the operator's own collectors: the controller's, and the per-cluster ones,
// which export the clusters of the caches while this replica leads.
type metrics struct {
	controller *controller.Metrics
	clusters   *clustermetrics.Collector
}

// newMetrics creates the controller's metrics, with the loop gauge of every kind the
// operator runs, and the per-cluster collector, and registers them with reg.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m, err := controller.NewMetrics(reg, loopGauges...)
	if err != nil {
		return nil, err
	}
	clusters := clustermetrics.NewCollector()
	if err := reg.Register(clusters); err != nil {
		return nil, fmt.Errorf("registering the per-cluster metrics: %w", err)
	}
	return &metrics{controller: m, clusters: clusters}, nil
}

// The cluster loops record what they did in the per-cluster metrics' counters.
var _ cluster.PassRecorder = (*clustermetrics.Counters)(nil)

// The cluster Reconciler is the EtcdCluster kind's Syncer: it reports a deleted cluster with
// cluster.ErrGone, which is controller.ErrGone, on which the controller stops the cluster's
// loop.
var _ controller.Syncer = (*cluster.Reconciler)(nil)

// The cluster Reconciler keeps each cluster's etcd clients between passes; the controller has
// it close them when the cluster's loop ends.
var _ controller.Forgetter = (*cluster.Reconciler)(nil)

// tlsSecretIndex indexes EtcdClusters by the Secrets their spec.tls names (tlsSecrets).
const tlsSecretIndex = "tlsSecret"

// tlsSecrets is the function of tlsSecretIndex: the namespace/name of every Secret a cluster's
// spec.tls names (spec.tls.peer.secretName, spec.tls.client.secretName; each holds its CA in
// ca.crt), which are in the cluster's namespace. It never fails: the informer panics on an
// index function's error.
func tlsSecrets(obj any) ([]string, error) {
	c, ok := obj.(*api.EtcdCluster)
	if !ok || c.Spec.TLS == nil {
		return nil, nil
	}
	var keys []string
	for _, from := range []*api.TLSSource{c.Spec.TLS.Peer, c.Spec.TLS.Client} {
		if from != nil && from.SecretName != "" {
			keys = append(keys, cache.NewObjectName(c.Namespace, from.SecretName).String())
		}
	}
	return keys, nil
}

// clusterKind registers EtcdClusters with the controller: each cluster's loop runs syncer's
// passes, and the events of the objects a cluster owns wake its loop. Pods, Services, budgets,
// NetworkPolicies and the operator's Secrets name their cluster through their controller
// ownerReference; EndpointSlices (owned by their Service) and claims (which may outlive their
// cluster) through their cluster label. A Secret of the user's, which no cluster owns, wakes
// every cluster of its namespace whose spec.tls names it (tlsSecretIndex), once it is in the
// cache: labelled as managed by the operator (docs/tls.md).
func clusterKind(inf *controller.Informers, syncer controller.Syncer) controller.Kind {
	clusters := inf.Etcd().Etcd().V1alpha1().EtcdClusters()
	kube := inf.Kube()
	byOwner := controller.OwnerKey(api.GroupName, clusterKindName)
	byLabel := controller.LabelKey(member.LabelCluster)
	namingSecret := controller.IndexKeys(clusters.Informer().GetIndexer(), tlsSecretIndex)
	return controller.Kind{
		Name:     clusterKindName,
		LogField: "cluster",
		Informer: clusters.Informer(),
		Indexers: cache.Indexers{tlsSecretIndex: tlsSecrets},
		Exists: controller.ListerExists(func(namespace, name string) (*api.EtcdCluster, error) {
			return clusters.Lister().EtcdClusters(namespace).Get(name)
		}),
		Syncer: syncer,
		Owned: []controller.Owned{
			{Informer: kube.Core().V1().Pods().Informer(), KeyOf: byOwner},
			{Informer: kube.Core().V1().Services().Informer(), KeyOf: byOwner},
			{Informer: kube.Discovery().V1().EndpointSlices().Informer(), KeyOf: byLabel},
			{Informer: kube.Policy().V1().PodDisruptionBudgets().Informer(), KeyOf: byOwner},
			{Informer: kube.Networking().V1().NetworkPolicies().Informer(), KeyOf: byOwner},
			{Informer: kube.Core().V1().PersistentVolumeClaims().Informer(), KeyOf: byLabel},
			{Informer: kube.Core().V1().Secrets().Informer(), KeyOf: byOwner, KeysOf: namingSecret},
		},
	}
}

// newClusterReconciler wires the cluster Reconciler to the clients and to the listers of the
// shared informers the controller's handlers watch.
func newClusterReconciler(o *Options, cl *clients, inf *controller.Informers, recorder record.EventRecorder, passes cluster.PassRecorder,
	log *logrus.Entry) *cluster.Reconciler {
	kube := inf.Kube()
	return cluster.NewReconciler(cluster.Deps{
		KubeClient:        cl.kube,
		EtcdClusterClient: cl.etcdClusters,
		Clusters:          inf.Etcd().Etcd().V1alpha1().EtcdClusters().Lister(),
		Backups:           inf.Etcd().Etcd().V1alpha1().EtcdBackups().Lister(),
		Pods:              kube.Core().V1().Pods().Lister(),
		Services:          kube.Core().V1().Services().Lister(),
		EndpointSlices:    kube.Discovery().V1().EndpointSlices().Lister(),
		Budgets:           kube.Policy().V1().PodDisruptionBudgets().Lister(),
		NetworkPolicies:   kube.Networking().V1().NetworkPolicies().Lister(),
		OperatorPeer:      member.OperatorPeer(o.LeaseNamespace),
		Claims:            kube.Core().V1().PersistentVolumeClaims().Lister(),
		Secrets:           kube.Core().V1().Secrets().Lister(),
		Leases:            kube.Coordination().V1().Leases().Lister(),
		MinLifetime:       o.TLSMinLifetime,
		HoldersRefresh:    o.ClientCAOverlap,
		Recorder:          recorder,
		Etcd:              etcdutil.NewFactory(0, 0),
		DNS:               clusterDNS(o, log),
		MemberInitImage:   o.MemberInitImage,
		Installation:      installation(o),
		TakeoverAfter:     o.TakeoverAfter,
		IdleCheck:         o.IdleCheck,
		Bounds:            o.Bounds,
		Passes:            passes,
		Log:               log.WithField("component", "cluster"),
	})
}

// backupKind registers EtcdBackups with the controller: each backup's loop runs syncer's
// passes, and the events of its pods (which name it through their controller
// ownerReference) wake it.
func backupKind(inf *controller.Informers, syncer controller.Syncer) controller.Kind {
	backups := inf.Etcd().Etcd().V1alpha1().EtcdBackups()
	return controller.Kind{
		Name:     backupKindName,
		LogField: "backup",
		Informer: backups.Informer(),
		Exists: controller.ListerExists(func(namespace, name string) (*api.EtcdBackup, error) {
			return backups.Lister().EtcdBackups(namespace).Get(name)
		}),
		Syncer: syncer,
		Owned: []controller.Owned{
			{Informer: inf.Kube().Core().V1().Pods().Informer(), KeyOf: controller.OwnerKey(api.GroupName, backupKindName)},
		},
	}
}

// newBackupReconciler wires the backup Reconciler to the clients and listers.
func newBackupReconciler(o *Options, cl *clients, inf *controller.Informers, recorder record.EventRecorder, log *logrus.Entry) *backup.Reconciler {
	return backup.NewReconciler(backup.Deps{
		KubeClient: cl.kube,
		Client:     cl.etcdClusters,
		Backups:    inf.Etcd().Etcd().V1alpha1().EtcdBackups().Lister(),
		Clusters:   inf.Etcd().Etcd().V1alpha1().EtcdClusters().Lister(),
		Pods:       inf.Kube().Core().V1().Pods().Lister(),
		Recorder:   recorder,
		Image:      o.MemberInitImage,
		Log:        log.WithField("component", "backup"),
	})
}

// scheduleKind registers EtcdBackupSchedules with the controller: each schedule's loop runs
// syncer's passes, and the events of its backups (which name it through their controller
// ownerReference) wake it.
func scheduleKind(inf *controller.Informers, syncer controller.Syncer) controller.Kind {
	schedules := inf.Etcd().Etcd().V1alpha1().EtcdBackupSchedules()
	return controller.Kind{
		Name:     scheduleKindName,
		LogField: "schedule",
		Informer: schedules.Informer(),
		Exists: controller.ListerExists(func(namespace, name string) (*api.EtcdBackupSchedule, error) {
			return schedules.Lister().EtcdBackupSchedules(namespace).Get(name)
		}),
		Syncer: syncer,
		Owned: []controller.Owned{
			{Informer: inf.Etcd().Etcd().V1alpha1().EtcdBackups().Informer(), KeyOf: controller.OwnerKey(api.GroupName, scheduleKindName)},
		},
	}
}

// newScheduleReconciler wires the schedule Reconciler to the client and listers.
func newScheduleReconciler(cl *clients, inf *controller.Informers, recorder record.EventRecorder, log *logrus.Entry) *schedule.Reconciler {
	return schedule.NewReconciler(schedule.Deps{
		Client:    cl.etcdClusters,
		Schedules: inf.Etcd().Etcd().V1alpha1().EtcdBackupSchedules().Lister(),
		Backups:   inf.Etcd().Etcd().V1alpha1().EtcdBackups().Lister(),
		Recorder:  recorder,
		Log:       log.WithField("component", "schedule"),
	})
}
