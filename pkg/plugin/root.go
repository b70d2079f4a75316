package plugin

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
)

// NewCommand is kubectl etcd. Its clients are made, on a command's first use, from the
// kubeconfig as kubectl reads it: --kubeconfig, else $KUBECONFIG, else ~/.kube/config, with
// kubectl's overrides (--context, -n/--namespace, --cluster, --user, ...).
func NewCommand(out, errOut io.Writer) *cobra.Command {
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{}
	build := func() (*Env, error) {
		kubeconfig := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, overrides)
		cfg, err := kubeconfig.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("reading the kubeconfig: %w", err)
		}
		ns, _, err := kubeconfig.Namespace()
		if err != nil {
			return nil, fmt.Errorf("reading the kubeconfig's namespace: %w", err)
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		etcd, err := versioned.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return &Env{Kube: kube, Etcd: etcd, Namespace: ns, Forwarder: NewPortForwarder(cfg, kube), Out: out, ErrOut: errOut, Now: time.Now}, nil
	}
	root := newRoot(build)
	root.SetOut(out)
	root.SetErr(errOut)
	root.PersistentFlags().StringVar(&loading.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "path to the kubeconfig file")
	clientcmd.BindOverrideFlags(overrides, root.PersistentFlags(), clientcmd.RecommendedConfigOverrideFlags(""))
	return root
}

// newRoot is the command tree, each command given the Env build makes.
func newRoot(build func() (*Env, error)) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-etcd",
		Short: "Day-2 operations on the EtcdClusters of etcd-operator",
		Long: "kubectl etcd shows an EtcdCluster's status and members and runs etcd's maintenance on it " +
			"(leadership, defragmentation, compaction, alarms), backups and restores. It reaches etcd through " +
			"the API server (a port-forward to each member pod), with the cluster's client certificate when it has client TLS.",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl etcd"},
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl completes a plugin's arguments through a kubectl_complete-etcd script of its
		// own, not through a subcommand.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	run := func(do func(ctx context.Context, env *Env, name string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			env, err := build()
			if err != nil {
				return err
			}
			if env.Forwarder != nil {
				defer env.Forwarder.Close()
			}
			return do(cmd.Context(), env, args[0])
		}
	}
	cluster := cobra.ExactArgs(1)

	root.AddCommand(&cobra.Command{
		Use: "status NAME", Short: "The cluster's phase and conditions, and each member: role, version, raft index, database size, claim, pod, node",
		Args: cluster, RunE: run(runStatus),
	})
	root.AddCommand(&cobra.Command{
		Use: "members NAME", Short: "etcd's member list", Args: cluster, RunE: run(runMembers),
	})

	var to string
	moveLeader := &cobra.Command{
		Use: "move-leader NAME", Short: "Hand leadership to --to, or to the healthiest other voting member",
		Args: cluster, RunE: run(func(ctx context.Context, env *Env, name string) error { return runMoveLeader(ctx, env, name, to) }),
	}
	moveLeader.Flags().StringVar(&to, "to", "", "the member to lead (its name, as kubectl etcd members lists it)")
	root.AddCommand(moveLeader)

	root.AddCommand(&cobra.Command{
		Use: "defrag NAME", Short: "Defragment every member, one at a time, the leader last",
		Args: cluster, RunE: run(runDefrag),
	})

	var physical bool
	compact := &cobra.Command{
		Use: "compact NAME", Short: "Drop every key's history before the current revision",
		Args: cluster, RunE: run(func(ctx context.Context, env *Env, name string) error { return runCompact(ctx, env, name, physical) }),
	}
	compact.Flags().BoolVar(&physical, "physical", false, "return once every member has removed the history from its backend")
	root.AddCommand(compact)

	alarm := &cobra.Command{Use: "alarm", Short: "etcd's alarms (NOSPACE, CORRUPT)"}
	alarm.AddCommand(&cobra.Command{Use: "list NAME", Short: "The alarms raised", Args: cluster, RunE: run(runAlarmList)})
	alarm.AddCommand(&cobra.Command{Use: "disarm NAME", Short: "Clear every alarm raised", Args: cluster, RunE: run(runAlarmDisarm)})
	root.AddCommand(alarm)

	var bo backupOptions
	backup := &cobra.Command{
		Use: "backup NAME --to CLAIM[:PATH]", Short: "Create an EtcdBackup of the cluster and follow it until it succeeds or fails",
		Args: cluster, RunE: run(func(ctx context.Context, env *Env, name string) error { return runBackup(ctx, env, name, bo) }),
	}
	backup.Flags().StringVar(&bo.To, "to", "", "where the snapshot goes: CLAIM[:PATH], a folder of a PersistentVolumeClaim of the namespace")
	backup.Flags().StringVar(&bo.Name, "name", "", "the EtcdBackup's name (default NAME-<UTC date>-<time>)")
	backup.Flags().StringVar(&bo.DeletionPolicy, "deletion-policy", string(api.BackupRetain), "Retain keeps the snapshot when the EtcdBackup is deleted; Delete deletes it")
	backup.Flags().BoolVar(&bo.Wait, "wait", true, "follow the backup until it succeeds or fails")
	backup.Flags().DurationVar(&bo.Timeout, "timeout", 10*time.Minute, "how long to follow it")
	_ = backup.MarkFlagRequired("to")
	root.AddCommand(backup)

	var ro restoreOptions
	restore := &cobra.Command{
		Use: "restore NAME --from-backup BACKUP", Short: "Create the EtcdCluster NAME from a Succeeded EtcdBackup and follow it until it is Available",
		Args: cluster, RunE: run(func(ctx context.Context, env *Env, name string) error { return runRestore(ctx, env, name, ro) }),
	}
	restore.Flags().StringVar(&ro.FromBackup, "from-backup", "", "the EtcdBackup of the namespace to restore")
	restore.Flags().Int32Var(&ro.Size, "size", api.DefaultSize, "spec.size of the new cluster")
	restore.Flags().StringVar(&ro.Version, "version", "", "spec.version of the new cluster (default: the etcd version the backup was taken from)")
	restore.Flags().Int64Var(&ro.BumpRevision, "bump-revision", 0, "raise the revisions by this much, and mark the older ones compacted (fromBackup.bumpRevision and markCompacted), for clients that watch")
	restore.Flags().BoolVar(&ro.Wait, "wait", true, "follow the cluster until it is Available")
	restore.Flags().DurationVar(&ro.Timeout, "timeout", 10*time.Minute, "how long to follow it")
	_ = restore.MarkFlagRequired("from-backup")
	root.AddCommand(restore)
	return root
}
