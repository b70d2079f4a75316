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
	run := runner(build)
	root.AddCommand(&cobra.Command{
		Use: "status NAME", Short: "The cluster's phase and conditions, and each member: role, version, raft index, database size, claim, pod, node",
		Args: clusterArg, RunE: run(runStatus),
	})
	root.AddCommand(&cobra.Command{
		Use: "members NAME", Short: "etcd's member list", Args: clusterArg, RunE: run(runMembers),
	})
	root.AddCommand(newMoveLeaderCmd(run))
	root.AddCommand(&cobra.Command{
		Use: "defrag NAME", Short: "Defragment every member, one at a time, the leader last",
		Args: clusterArg, RunE: run(runDefrag),
	})
	root.AddCommand(newCompactCmd(run))
	root.AddCommand(newAlarmCmd(run))
	root.AddCommand(newBackupCmd(run))
	root.AddCommand(newRestoreCmd(run))
	return root
}

// clusterArg is the arguments of every command on a cluster: its name, alone.
var clusterArg = cobra.ExactArgs(1)

// clusterAction is what a command does to the cluster name, with the Env it runs in.
type clusterAction func(ctx context.Context, env *Env, name string) error

// runFunc makes a command's RunE of a clusterAction.
type runFunc func(clusterAction) func(*cobra.Command, []string) error

// runner is the runFunc of every command: its RunE builds the Env only when the command runs,
// not when the tree is made, and closes the Env's forwards after.
func runner(build func() (*Env, error)) runFunc {
	return func(do clusterAction) func(*cobra.Command, []string) error {
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
}

// newMoveLeaderCmd is move-leader, with its --to.
func newMoveLeaderCmd(run runFunc) *cobra.Command {
	var to string
	moveLeader := &cobra.Command{
		Use: "move-leader NAME", Short: "Hand leadership to --to, or to the healthiest other voting member",
		Args: clusterArg, RunE: run(func(ctx context.Context, env *Env, name string) error { return runMoveLeader(ctx, env, name, to) }),
	}
	moveLeader.Flags().StringVar(&to, "to", "", "the member to lead (its name, as kubectl etcd members lists it)")
	return moveLeader
}

// newCompactCmd is compact, with its --physical.
func newCompactCmd(run runFunc) *cobra.Command {
	var physical bool
	compact := &cobra.Command{
		Use: "compact NAME", Short: "Drop every key's history before the current revision",
		Args: clusterArg, RunE: run(func(ctx context.Context, env *Env, name string) error { return runCompact(ctx, env, name, physical) }),
	}
	compact.Flags().BoolVar(&physical, "physical", false, "return once every member has removed the history from its backend")
	return compact
}

// newAlarmCmd is the alarm group: list and disarm.
func newAlarmCmd(run runFunc) *cobra.Command {
	alarm := &cobra.Command{Use: "alarm", Short: "etcd's alarms (NOSPACE, CORRUPT)"}
	alarm.AddCommand(&cobra.Command{Use: "list NAME", Short: "The alarms raised", Args: clusterArg, RunE: run(runAlarmList)})
	alarm.AddCommand(&cobra.Command{Use: "disarm NAME", Short: "Clear every alarm raised", Args: clusterArg, RunE: run(runAlarmDisarm)})
	return alarm
}

// newBackupCmd is backup, with the options of the EtcdBackup it creates and of following it.
func newBackupCmd(run runFunc) *cobra.Command {
	var bo backupOptions
	backup := &cobra.Command{
		Use: "backup NAME --to CLAIM[:PATH]", Short: "Create an EtcdBackup of the cluster and follow it until it succeeds or fails",
		Args: clusterArg, RunE: run(func(ctx context.Context, env *Env, name string) error { return runBackup(ctx, env, name, bo) }),
	}
	backup.Flags().StringVar(&bo.To, "to", "", "where the snapshot goes: CLAIM[:PATH], a folder of a PersistentVolumeClaim of the namespace")
	backup.Flags().StringVar(&bo.Name, "name", "", "the EtcdBackup's name (default NAME-<UTC date>-<time>)")
	backup.Flags().StringVar(&bo.DeletionPolicy, "deletion-policy", string(api.BackupRetain), "Retain keeps the snapshot when the EtcdBackup is deleted; Delete deletes it")
	backup.Flags().BoolVar(&bo.Wait, "wait", true, "follow the backup until it succeeds or fails")
	backup.Flags().DurationVar(&bo.Timeout, "timeout", 10*time.Minute, "how long to follow it")
	_ = backup.MarkFlagRequired("to")
	return backup
}

// newRestoreCmd is restore, with the options of the EtcdCluster it creates and of following it.
func newRestoreCmd(run runFunc) *cobra.Command {
	var ro restoreOptions
	restore := &cobra.Command{
		Use: "restore NAME --from-backup BACKUP", Short: "Create the EtcdCluster NAME from a Succeeded EtcdBackup and follow it until it is Available",
		Args: clusterArg, RunE: run(func(ctx context.Context, env *Env, name string) error { return runRestore(ctx, env, name, ro) }),
	}
	restore.Flags().StringVar(&ro.FromBackup, "from-backup", "", "the EtcdBackup of the namespace to restore")
	restore.Flags().Int32Var(&ro.Size, "size", api.DefaultSize, "spec.size of the new cluster")
	restore.Flags().StringVar(&ro.Version, "version", "", "spec.version of the new cluster (default: the etcd version the backup was taken from)")
	restore.Flags().Int64Var(&ro.BumpRevision, "bump-revision", 0, "raise the revisions by this much, and mark the older ones compacted (fromBackup.bumpRevision and markCompacted), for clients that watch")
	restore.Flags().BoolVar(&ro.Wait, "wait", true, "follow the cluster until it is Available")
	restore.Flags().DurationVar(&ro.Timeout, "timeout", 10*time.Minute, "how long to follow it")
	_ = restore.MarkFlagRequired("from-backup")
	return restore
}
