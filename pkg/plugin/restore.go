package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// restoreOptions are the flags of kubectl etcd restore.
type restoreOptions struct {
	// FromBackup is the Succeeded EtcdBackup of the namespace to restore.
	FromBackup string
	// Size is spec.size; Version spec.version, the backup's etcd version when empty.
	Size    int32
	Version string
	// BumpRevision is fromBackup.bumpRevision; markCompacted goes with it.
	BumpRevision int64
	// Wait follows the new cluster until it is Available, for at most Timeout.
	Wait    bool
	Timeout time.Duration
}

// restoreCluster is the EtcdCluster a restore creates.
func restoreCluster(name, namespace string, b *api.EtcdBackup, o restoreOptions) *api.EtcdCluster {
	version := o.Version
	if version == "" {
		version = b.Status.EtcdVersion
	}
	return &api.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: api.EtcdClusterSpec{
			Size:    o.Size,
			Version: version,
			Bootstrap: &api.BootstrapSpec{FromBackup: &api.FromBackupSpec{
				BackupName:    b.Name,
				BumpRevision:  o.BumpRevision,
				MarkCompacted: o.BumpRevision > 0,
			}},
		},
	}
}

// runRestore creates a new EtcdCluster whose seed is restored from a Succeeded EtcdBackup and
// follows it until it is Available.
func runRestore(ctx context.Context, env *Env, name string, o restoreOptions) error {
	b, err := env.Etcd.EtcdV1alpha1().EtcdBackups(env.Namespace).Get(ctx, o.FromBackup, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("etcdbackup %q %w in namespace %q", o.FromBackup, ErrNotFound, env.Namespace)
	case err != nil:
		return fmt.Errorf("getting etcdbackup %q: %w", o.FromBackup, err)
	case b.Status.Phase != api.BackupSucceeded:
		return fmt.Errorf("etcdbackup %s is %s: a cluster is restored only from a backup that succeeded", b.Name, orDash(string(b.Status.Phase)))
	}
	clusters := env.Etcd.EtcdV1alpha1().EtcdClusters(env.Namespace)
	c, err := clusters.Create(ctx, restoreCluster(name, env.Namespace, b, o), metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("etcdcluster %q exists already: restore creates a new cluster; name another", name)
		}
		return fmt.Errorf("creating etcdcluster %s: %w", name, err)
	}
	fmt.Fprintf(env.Out, "etcdcluster/%s created: %d members of etcd %s, its seed restored from etcdbackup/%s (revision %d of %s)\n",
		c.Name, c.Spec.Size, orDash(c.Spec.Version), b.Name, b.Status.Revision, b.Spec.ClusterName)
	if !o.Wait {
		return nil
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return clusters.List(ctx, byName(name, opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return clusters.Watch(ctx, byName(name, opts))
		},
	}
	last, err := follow(ctx, env, lw, &api.EtcdCluster{}, name, o.Timeout, clusterLine, func(c *api.EtcdCluster) bool {
		return meta.IsStatusConditionTrue(c.Status.Conditions, string(api.ConditionAvailable)) || restoreFailed(c) != nil
	})
	switch {
	case errors.Is(err, errTimedOut):
		return fmt.Errorf("etcdcluster/%w; it goes on: kubectl etcd status %s", err, name)
	case err != nil:
		return fmt.Errorf("following etcdcluster/%s: %w", name, err)
	}
	return restoreFailed(last)
}

// restoreFailed is the error of a cluster whose restore cannot go on: the backup named cannot be
// used (Degraded RestoreFailed). Other Degraded reasons (a pod that cannot start, member-init's
// restore-failed of a corrupt file quoted in it) are followed, as the operator may repair
// them or the user fix them while the command waits.
func restoreFailed(c *api.EtcdCluster) error {
	d := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionDegraded))
	if d != nil && d.Status == metav1.ConditionTrue && d.Reason == string(api.ReasonRestoreFailed) {
		return fmt.Errorf("etcdcluster/%s: %s: %s", c.Name, d.Reason, d.Message)
	}
	return nil
}

// clusterLine is a cluster's progress line: its phase, how many members are ready, and the
// reasons of Progressing and (when True) Degraded.
func clusterLine(c *api.EtcdCluster) string {
	l := fmt.Sprintf("etcdcluster/%s: %s, %d/%d ready", c.Name, orDash(string(c.Status.Phase)), c.Status.ReadyMembers, c.Spec.Size)
	if p := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionProgressing)); p != nil && p.Status == metav1.ConditionTrue {
		l += ", " + p.Reason
	}
	if d := meta.FindStatusCondition(c.Status.Conditions, string(api.ConditionDegraded)); d != nil && d.Status == metav1.ConditionTrue {
		l += ", Degraded: " + d.Reason
	}
	if meta.IsStatusConditionTrue(c.Status.Conditions, string(api.ConditionAvailable)) {
		l += ", Available"
	}
	return l
}
