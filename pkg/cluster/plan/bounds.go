package plan

import "time"

// How long the planner lets a state last before it reports it, or acts on it. Each bound is
// an operator flag (pkg/operator/options.go) whose default is the production value below;
// the planner's tables run with the defaults, and the end-to-end suite deploys the operator
// with shorter ones (docs/testing.md), so that it checks the same rules in less time.

// The production values of the bounds.
const (
	// DefaultStuckAfter is how long a pod may be in trouble before the cluster says so and
	// the planner acts on it: long enough for an image pull to be retried and a crash to be
	// restarted, short enough for a user watching `kubectl get etcd`.
	DefaultStuckAfter = 30 * time.Second
	// DefaultComebackBound is how long a rolled member has, from the creation of its new pod
	// or the change of its image in place, to be started, healthy, voting, on the new version
	// and caught up: room for pulling a new image and replaying the member's log.
	DefaultComebackBound = 2 * time.Minute
	// DefaultElectionBound is how long members may answer without a member list before the
	// cluster is reported without quorum: several of etcd's election timeouts.
	DefaultElectionBound = 15 * time.Second
)

// Bounds are the planner's time bounds; a zero field is its default.
type Bounds struct {
	// StuckAfter: a pod that cannot start (stuck.go), or is still there that long past its
	// grace period, is reported, and the planner acts on it.
	StuckAfter time.Duration
	// Comeback: a member rolled that is not back that long after its new pod was made, or its
	// image changed in place, stops the rollout (plan_rollout.go).
	Comeback time.Duration
	// Election: members that answer without a member list for that long are reported as a
	// cluster without quorum rather than an election (election.go).
	Election time.Duration
}

// DefaultBounds are the production values.
func DefaultBounds() Bounds {
	return Bounds{StuckAfter: DefaultStuckAfter, Comeback: DefaultComebackBound, Election: DefaultElectionBound}
}

// WithDefaults is b with every zero field set to its default.
func (b Bounds) WithDefaults() Bounds {
	d := DefaultBounds()
	if b.StuckAfter > 0 {
		d.StuckAfter = b.StuckAfter
	}
	if b.Comeback > 0 {
		d.Comeback = b.Comeback
	}
	if b.Election > 0 {
		d.Election = b.Election
	}
	return d
}

// bounds are the bounds of the pass: State.Bounds, defaults filled in.
func (s State) bounds() Bounds {
	return s.Bounds.WithDefaults()
}
