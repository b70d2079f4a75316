// Package etcdfacts holds what the operator knows of etcd as plain values: the state a member
// starts in, what a member reports of itself, and the alarms etcd raises. It imports nothing
// that does I/O, so the planner (pkg/cluster/plan) can decide from these facts without
// depending on the etcd client; pkg/etcdutil, which talks to etcd, gives the same types under
// its own names.
package etcdfacts

import (
	"strconv"
	"strings"
)

// ClusterState is the value of etcd's --initial-cluster-state flag.
type ClusterState string

// The states a member's etcd starts in.
const (
	// ClusterStateNew: the member bootstraps a new cluster, and starts at once.
	ClusterStateNew ClusterState = "new"
	// ClusterStateExisting: the member joins a running cluster, once it has been added.
	ClusterStateExisting ClusterState = "existing"
)

// Status is what one member reports of itself.
type Status struct {
	// ID of the member that answered.
	ID uint64
	// ClusterID is the ID of the etcd cluster the answering member belongs to.
	ClusterID uint64
	// Leader is the member ID the answering member follows (0: no leader known).
	Leader uint64
	// RaftIndex and RaftAppliedIndex tell how far the member's log has progressed.
	RaftIndex        uint64
	RaftAppliedIndex uint64
	// RaftTerm is the member's current raft term.
	RaftTerm uint64
	// IsLearner is true when the answering member is a learner.
	IsLearner bool
	// Version is the etcd server version, e.g. "3.6.16".
	Version string
	// StorageVersion is the version of the member's data format, e.g. "3.6.0" (etcd 3.6 and
	// later; empty from 3.5): during a downgrade etcd lowers it before members may restart on
	// the older release.
	StorageVersion string
	// DowngradeTarget is the version etcd's downgrade API is enabled for, e.g. "3.6.0"; empty
	// when no downgrade is in progress (and always from 3.5 members).
	DowngradeTarget string
	// Errors are the member's reported errors (alarms such as NOSPACE, corruption).
	Errors []string
	// DBSize is the size of the member's backend file in bytes, which the backend quota
	// bounds; DBSizeInUse the part of it that holds data (the rest is free pages that only
	// defragmenting gives back).
	DBSize      int64
	DBSizeInUse int64
	// Revision is the key-value store's revision the member has applied.
	Revision int64
}

// AlarmType is an alarm a member raises.
type AlarmType string

// The alarms etcd raises; both make the cluster refuse writes until disarmed.
const (
	// AlarmNoSpace: the member's backend reached its quota (--quota-backend-bytes).
	AlarmNoSpace AlarmType = "NOSPACE"
	// AlarmCorrupt: the member's data differs from the others' (corruption check).
	AlarmCorrupt AlarmType = "CORRUPT"
)

// MaxLearnersFlag is etcd's flag for how many learners a member lets the cluster's membership
// hold (--max-learners=N). etcd 3.6 brought it (its default is one); etcd 3.5 holds one
// learner at most, and refuses to start with the flag. Every member checks the limit with its
// own setting: when it applies the change that adds a learner (a member whose limit is lower
// than the others' rejects the change they apply, and its membership parts from theirs), when
// it joins, and when it restarts on its data.
const MaxLearnersFlag = "--max-learners"

// TakesMaxLearners reports whether etcd of the given version ("3.6.16", "v3.7.0") knows
// MaxLearnersFlag; false for 3.5 and for a version it cannot read.
func TakesMaxLearners(version string) bool {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (major > 3 || (major == 3 && minor >= 6))
}
