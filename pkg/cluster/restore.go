package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// restoreSource finds the snapshot spec.bootstrap.fromBackup names: the location of a
// Succeeded EtcdBackup of the cluster's namespace (with its SHA-256, which the seed checks an
// S3 download against), or the destination and key given. It
// returns why it cannot be found instead (the planner then creates no seed); nil and "" when
// the cluster is not restored, or once it has started (fromBackup applies to the seed's first
// start only, and the EtcdBackup may go afterwards).
func (r *Reconciler) restoreSource(ctx context.Context, c *api.EtcdCluster) (*member.Restore, string) {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.FromBackup == nil || c.Status.Size > 0 {
		return nil, ""
	}
	from := c.Spec.Bootstrap.FromBackup
	dest, key, sha := from.Destination, from.Key, ""
	if from.BackupName != "" {
		if r.deps.Backups == nil {
			return nil, "the operator does not read EtcdBackups"
		}
		b, err := r.deps.Backups.EtcdBackups(c.Namespace).Get(from.BackupName)
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Sprintf("EtcdBackup %s does not exist in namespace %s", from.BackupName, c.Namespace)
		case err != nil:
			return nil, fmt.Sprintf("reading EtcdBackup %s: %v", from.BackupName, err)
		case b.Status.Phase != api.BackupSucceeded || b.Status.Location == "":
			return nil, fmt.Sprintf("EtcdBackup %s has not succeeded (phase %q)", from.BackupName, b.Status.Phase)
		}
		dest, key, sha = &b.Spec.Destination, b.Status.Location, b.Status.SHA256
	}
	switch {
	case dest != nil && dest.Volume != nil:
		return &member.Restore{ClaimName: dest.Volume.ClaimName, Key: key,
			BumpRevision: from.BumpRevision, MarkCompacted: from.MarkCompacted}, ""
	case dest != nil && dest.S3 != nil:
		get := func(name string) (*corev1.Secret, error) { return r.secret(ctx, c.Namespace, name) }
		if problem := member.S3SecretsProblem(dest.S3, c.Namespace, get); problem != "" {
			return nil, problem
		}
		res := &member.Restore{Key: key, S3: member.S3SourceOf(dest.S3), BumpRevision: from.BumpRevision, MarkCompacted: from.MarkCompacted}
		if from.BackupName != "" {
			res.SHA256 = sha
		}
		return res, ""
	}
	return nil, "fromBackup names no destination to restore from"
}

// restoreFor is the restore of the pod a is to create: only a new cluster's seed has one.
func (o *observation) restoreFor(a plan.Action) *member.Restore {
	if a.ClusterState != etcdutil.ClusterStateNew {
		return nil
	}
	return o.restore
}
