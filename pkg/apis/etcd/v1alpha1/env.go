package v1alpha1

import (
	"slices"
	"strings"
)

// The policy of spec.pod.env, which the CRD's rule on spec.pod.env[] enforces at apply and
// member.Pod again for objects stored before the rule existed. etcd reads every flag from an
// ETCD_<FLAG> variable as well, so an env list reaches every setting etcd has. A variable
// outside the ETCD_ prefix (GOMAXPROCS, GOMEMLIMIT, GODEBUG, TZ, ...) is the user's. Of the
// ETCD_ variables only TunableEtcdEnv may be set: an allowlist rather than a denylist, because
// each etcd release adds flags and a new one that changes identity, membership, durability or
// security (as ETCD_FORCE_NEW_CLUSTER, ETCD_UNSAFE_NO_FSYNC, ETCD_STRICT_RECONFIG_CHECK,
// ETCD_DISCOVERY*, the TLS and auth flags or ETCD_FEATURE_GATES do) must not pass unnoticed.
// The CEL rules in types.go spell out the same lists: TestCRDEnvPolicyMatchesGo keeps them in
// step.

// TunableEtcdEnv are the ETCD_ variables a user may set: they tune timing, batching,
// compaction, limits of a request and logging, and leave every member's identity, membership,
// data and security as the operator made them. ETCD_MAX_WALS and ETCD_MAX_SNAPSHOTS are left
// out: the backend quota is computed from the storage with room for etcd's default number of
// files.
var TunableEtcdEnv = []string{
	"ETCD_SNAPSHOT_COUNT",
	"ETCD_HEARTBEAT_INTERVAL",
	"ETCD_ELECTION_TIMEOUT",
	"ETCD_AUTO_COMPACTION_MODE",
	"ETCD_AUTO_COMPACTION_RETENTION",
	"ETCD_COMPACTION_BATCH_LIMIT",
	"ETCD_COMPACTION_SLEEP_INTERVAL",
	"ETCD_BACKEND_BATCH_INTERVAL",
	"ETCD_BACKEND_BATCH_LIMIT",
	"ETCD_BACKEND_BBOLT_FREELIST_TYPE",
	"ETCD_MAX_TXN_OPS",
	"ETCD_MAX_REQUEST_BYTES",
	"ETCD_MAX_CONCURRENT_STREAMS",
	"ETCD_GRPC_KEEPALIVE_MIN_TIME",
	"ETCD_GRPC_KEEPALIVE_INTERVAL",
	"ETCD_GRPC_KEEPALIVE_TIMEOUT",
	"ETCD_WARNING_APPLY_DURATION",
	"ETCD_WARNING_UNARY_REQUEST_DURATION",
	"ETCD_METRICS",
	"ETCD_LOG_LEVEL",
	"ETCD_LOG_FORMAT",
}

// OperatorEtcdEnv are the ETCD_ variables of the flags the operator passes to etcd itself
// (etcd refuses to start when a variable shadows a flag given on its command line). They are
// refused with a message of their own.
var OperatorEtcdEnv = []string{
	"ETCD_NAME",
	"ETCD_DATA_DIR",
	"ETCD_LISTEN_PEER_URLS",
	"ETCD_LISTEN_CLIENT_URLS",
	"ETCD_ADVERTISE_CLIENT_URLS",
	"ETCD_INITIAL_ADVERTISE_PEER_URLS",
	"ETCD_INITIAL_CLUSTER",
	"ETCD_INITIAL_CLUSTER_STATE",
	"ETCD_INITIAL_CLUSTER_TOKEN",
	"ETCD_FORCE_NEW_CLUSTER",
	"ETCD_QUOTA_BACKEND_BYTES",
}

// EnvAllowed reports whether spec.pod.env may set the variable name.
func EnvAllowed(name string) bool {
	return !strings.HasPrefix(name, "ETCD_") || slices.Contains(TunableEtcdEnv, name)
}
