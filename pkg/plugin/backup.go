package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// backupOptions are the flags of kubectl etcd backup.
type backupOptions struct {
	// To is where the snapshot goes (parseDestination).
	To string
	// Name of the EtcdBackup; empty: <cluster>-<UTC time>.
	Name string
	// DeletionPolicy is spec.deletionPolicy: Retain or Delete.
	DeletionPolicy string
	// Wait follows the backup until it succeeds or fails, for at most Timeout.
	Wait    bool
	Timeout time.Duration
}

// maxBackupName is the longest EtcdBackup name the CRD accepts (its pods are named
// <name>-attempt<n>).
const maxBackupName = 50

// parseDestination reads --to. CLAIM[:PATH] is a folder of a PersistentVolumeClaim of the
// namespace (the claim's root without PATH). A destination of another kind is written as a URL
// of its own scheme (s3://bucket/prefix, say, once EtcdBackup has one), which a claim's name
// cannot be mistaken for: it has no "://".
func parseDestination(s string) (api.BackupDestination, error) {
	if scheme, _, ok := strings.Cut(s, "://"); ok {
		return api.BackupDestination{}, fmt.Errorf("--to %s: no destination of scheme %q; a volume is CLAIM[:PATH]", s, scheme)
	}
	claim, path, _ := strings.Cut(s, ":")
	if errs := validation.IsDNS1123Subdomain(claim); len(errs) > 0 {
		return api.BackupDestination{}, fmt.Errorf("--to %s: %q is not a claim name: %s", s, claim, strings.Join(errs, "; "))
	}
	if strings.HasPrefix(path, "/") || strings.Contains("/"+path+"/", "/../") {
		return api.BackupDestination{}, fmt.Errorf("--to %s: the path must be relative to the claim's root, without '..'", s)
	}
	return api.BackupDestination{Volume: &api.VolumeDestination{ClaimName: claim, Path: path}}, nil
}

// backupName is the EtcdBackup's name: the one asked for, or <cluster>-<UTC time to the
// second>, the cluster's name cut so the whole fits.
func backupName(cluster, asked string, now time.Time) string {
	if asked != "" {
		return asked
	}
	suffix := now.UTC().Format("-20060102-150405")
	if len(cluster)+len(suffix) > maxBackupName {
		cluster = strings.TrimRight(cluster[:maxBackupName-len(suffix)], "-.")
	}
	return cluster + suffix
}

// runBackup creates an EtcdBackup of the cluster and follows it to Succeeded or Failed.
func runBackup(ctx context.Context, env *Env, cluster string, o backupOptions) error {
	dest, err := parseDestination(o.To)
	if err != nil {
		return err
	}
	if _, err := getCluster(ctx, env, cluster); err != nil {
		return err
	}
	name := backupName(cluster, o.Name, env.Now())
	b := &api.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace},
		Spec:       api.EtcdBackupSpec{ClusterName: cluster, Destination: dest, DeletionPolicy: api.BackupDeletionPolicy(o.DeletionPolicy)},
	}
	backups := env.Etcd.EtcdV1alpha1().EtcdBackups(env.Namespace)
	b, err = backups.Create(ctx, b, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("etcdbackup %q exists already: each backup is a new EtcdBackup; name another with --name", name)
		}
		return fmt.Errorf("creating the EtcdBackup: %w", err)
	}
	fmt.Fprintf(env.Out, "etcdbackup/%s created: a snapshot of %s to claim %s\n", b.Name, cluster, describeDestination(dest))
	if !o.Wait {
		return nil
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return backups.List(ctx, byName(b.Name, opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return backups.Watch(ctx, byName(b.Name, opts))
		},
	}
	last, err := follow(ctx, env, lw, &api.EtcdBackup{}, b.Name, o.Timeout, backupLine, func(b *api.EtcdBackup) bool {
		return b.Status.Phase == api.BackupSucceeded || b.Status.Phase == api.BackupFailed
	})
	switch {
	case errors.Is(err, errTimedOut):
		return fmt.Errorf("etcdbackup/%w; it goes on: kubectl get etcdbackup %s -w", err, b.Name)
	case err != nil:
		return fmt.Errorf("following etcdbackup/%s: %w", b.Name, err)
	case last.Status.Phase == api.BackupFailed:
		return fmt.Errorf("etcdbackup/%s failed: %s", b.Name, failure(last))
	}
	return nil
}

func describeDestination(d api.BackupDestination) string {
	if d.Volume == nil {
		return "-"
	}
	if d.Volume.Path == "" {
		return d.Volume.ClaimName
	}
	return d.Volume.ClaimName + ", folder " + d.Volume.Path
}

// backupLine is a backup's progress line.
func backupLine(b *api.EtcdBackup) string {
	st := b.Status
	var what string
	switch st.Phase {
	case "", api.BackupPending:
		what = "Pending"
	case api.BackupRunning:
		what = fmt.Sprintf("Running, attempt %d", st.Attempts)
	case api.BackupSucceeded:
		what = fmt.Sprintf("Succeeded: revision %d, %s, from %s, at %s", st.Revision, bytesIEC(st.SizeBytes), st.Member, st.Location)
	case api.BackupFailed:
		what = "Failed: " + failure(b)
	default:
		what = string(st.Phase)
	}
	return "etcdbackup/" + b.Name + ": " + what
}

// failure is a failed backup's reason and message.
func failure(b *api.EtcdBackup) string {
	c := meta.FindStatusCondition(b.Status.Conditions, string(api.BackupConditionFailed))
	if c == nil {
		return "no reason given"
	}
	return c.Reason + ": " + c.Message
}
