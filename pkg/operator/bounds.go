package operator

import (
	"flag"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/cluster"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
)

// The operator's time bounds: how long a cluster may be in a state before status says so
// and the operator acts on it. Each flag's default is the production value; the end-to-end
// suite deploys the operator with shorter ones (test/e2e/deploy, docs/testing.md), which
// exercise the same rules sooner.

// Flags of the bounds, named here for the end-to-end suite, which reads them back from the
// operator's Deployment.
const (
	FlagPodStuckAfter        = "pod-stuck-after"
	FlagRolloutStuckAfter    = "rollout-stuck-after"
	FlagNoQuorumAfter        = "no-quorum-after"
	FlagClusterTakeoverAfter = "cluster-takeover-after"
	FlagTLSMinLifetime       = "tls-min-lifetime"
	FlagIdleCheckInterval    = "idle-check-interval"
	FlagClientCAOverlap      = "client-ca-overlap"
)

// boundLimit is a bound's production value and the range its flag accepts: below it,
// ordinary slowness (an image pull, a leader election, a pass that waits for etcd) would be
// reported or acted on as trouble; above it, trouble would go unreported for longer than
// anyone waits.
type boundLimit struct {
	flag          string
	def, min, max time.Duration
}

// boundLimits are the accepted ranges, by flag.
var boundLimits = []boundLimit{
	{FlagPodStuckAfter, plan.DefaultStuckAfter, 5 * time.Second, time.Hour},
	{FlagRolloutStuckAfter, plan.DefaultComebackBound, 10 * time.Second, time.Hour},
	{FlagNoQuorumAfter, plan.DefaultElectionBound, 2 * time.Second, 10 * time.Minute},
	// The holder renews the cluster's Lease a third of the way through, on a pass: a pass
	// comes every few seconds, so a minute leaves room for a slow one.
	{FlagClusterTakeoverAfter, cluster.DefaultTakeoverAfter, time.Minute, time.Hour},
	// Only tests go below an hour, to see leaves renewed within a run: a leaf renewed every
	// few minutes in production would only add churn. Below five minutes a leaf would be due
	// again as soon as it is issued (its validity starts five minutes back, for clock skew), and
	// would expire before the kubelet refreshes the mounted Secret.
	{FlagTLSMinLifetime, cluster.DefaultMinLifetime, 5 * time.Minute, cluster.DefaultMinLifetime},
	// Not a bound on a state but how often a steady cluster is asked again: below a second
	// passes would run back to back; above five minutes an alarm raised inside etcd, which
	// changes no pod, would wait that long for status (cluster.DefaultIdleCheck).
	{FlagIdleCheckInterval, cluster.DefaultIdleCheck, time.Second, 5 * time.Minute},
	// What it must cover is the kubelets' refresh of a mounted Secret (their sync period,
	// plus jitter): below ten seconds no kubelet refreshes; past an hour a rotation would
	// hold two CAs for longer than anyone needs.
	{FlagClientCAOverlap, plan.DefaultHoldersRefresh, 10 * time.Second, time.Hour},
}

// addBoundFlags binds the bounds to fs, defaults the production values.
func (o *Options) addBoundFlags(fs *flag.FlagSet) {
	fs.DurationVar(&o.Bounds.StuckAfter, FlagPodStuckAfter, plan.DefaultStuckAfter,
		"how long a member pod may fail to start (image pull, crash loop, no node) or stay past its grace period while terminating "+
			"before status says so (PodCannotStart, PodStuckTerminating) and the operator acts on it")
	fs.DurationVar(&o.Bounds.Comeback, FlagRolloutStuckAfter, plan.DefaultComebackBound,
		"how long a member rolled to a new version or pod spec has to come back healthy and caught up before the rollout stops (RolloutStuck)")
	fs.DurationVar(&o.Bounds.Election, FlagNoQuorumAfter, plan.DefaultElectionBound,
		"how long members may answer without a leader (an election) before status says the cluster has no quorum (NoQuorum)")
	fs.DurationVar(&o.TakeoverAfter, FlagClusterTakeoverAfter, cluster.DefaultTakeoverAfter,
		"how long a cluster's Lease held by another installation of the operator must go unrenewed before this one takes the cluster over")
	fs.DurationVar(&o.TLSMinLifetime, FlagTLSMinLifetime, cluster.DefaultMinLifetime,
		"the shortest spec.tls.leafLifetime honoured (a shorter one is raised to it); lowered only by tests, to see certificates renewed")
	fs.DurationVar(&o.ClientCAOverlap, FlagClientCAOverlap, plan.DefaultHoldersRefresh,
		"how long a CA rotation keeps a client port trusting its old CA after switching the leaves to the new one, "+
			"so that pods mounting <name>-client-tls get the new certificate from their kubelet (its sync period plus jitter) first")
	fs.DurationVar(&o.IdleCheck, FlagIdleCheckInterval, cluster.DefaultIdleCheck,
		"how often a steady cluster's members are asked again when nothing changes (a changed pod starts a pass at once); "+
			"shorter where a cluster's Lease or a TLS leaf needs it")
}

// boundValues are the bounds set, by flag.
func (o *Options) boundValues() map[string]time.Duration {
	return map[string]time.Duration{
		FlagPodStuckAfter:        o.Bounds.StuckAfter,
		FlagRolloutStuckAfter:    o.Bounds.Comeback,
		FlagNoQuorumAfter:        o.Bounds.Election,
		FlagClusterTakeoverAfter: o.TakeoverAfter,
		FlagTLSMinLifetime:       o.TLSMinLifetime,
		FlagIdleCheckInterval:    o.IdleCheck,
		FlagClientCAOverlap:      o.ClientCAOverlap,
	}
}

// boundErrors checks every bound against its range.
func (o *Options) boundErrors() []error {
	values := o.boundValues()
	var errs []error
	for _, l := range boundLimits {
		if v := values[l.flag]; v < l.min || v > l.max {
			errs = append(errs, fmt.Errorf("--%s=%s must be between %s and %s", l.flag, v, l.min, l.max))
		}
	}
	return errs
}

// logBounds says once, at start, which bounds differ from their production values (an
// operator deployed for the end-to-end suite), so that its log shows what it counts.
func (o *Options) logBounds(log *logrus.Entry) {
	values := o.boundValues()
	fields := logrus.Fields{}
	for _, l := range boundLimits {
		if v := values[l.flag]; v != l.def {
			fields[l.flag] = v.String()
		}
	}
	if len(fields) > 0 {
		log.WithFields(fields).Info("Time bounds differ from the production defaults")
	}
}
