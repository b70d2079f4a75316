// Package naming holds how a member is named: its name and ordinal, its claim's name, the
// name of its etcd container, and the spelling of an etcd version. It is pure and imports
// nothing that does I/O, so the planner (pkg/cluster/plan) can name members without pulling in
// pkg/member's pod builders; pkg/member gives the same functions under its own names.
package naming

import (
	"strconv"
	"strings"
)

// EtcdContainerName is the name of the container that runs etcd in a member's pod.
const EtcdContainerName = "etcd"

// Name is the name of the member (and its pod) with the given ordinal: <cluster>-<ordinal>.
func Name(cluster string, ordinal int) string {
	return cluster + "-" + strconv.Itoa(ordinal)
}

// Ordinal parses the ordinal out of a member name of the cluster. ok is false when the name
// does not belong to the cluster.
func Ordinal(cluster, member string) (ordinal int, ok bool) {
	rest, found := strings.CutPrefix(member, cluster+"-")
	if !found || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// ClaimName is the name of the claim that holds the data of the member with the given ordinal:
// data-<cluster>-<ordinal>, as a StatefulSet would name it.
func ClaimName(cluster string, ordinal int) string {
	return "data-" + Name(cluster, ordinal)
}

// NormalizeVersion drops the optional leading "v" of a spec.version.
func NormalizeVersion(version string) string {
	return strings.TrimPrefix(version, "v")
}

// FormatID writes an etcd member ID the way etcd and the operator print it.
func FormatID(id uint64) string { return strconv.FormatUint(id, 16) }

// ParseID reads an ID written by FormatID; 0 when s is not one.
func ParseID(s string) uint64 {
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0
	}
	return id
}
