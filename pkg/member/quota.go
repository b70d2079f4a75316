package member

import (
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// Sizes behind etcd's backend quota (--quota-backend-bytes), which is tied to the volume that
// holds the data: etcd refuses writes (a NOSPACE alarm) when its database reaches the quota,
// which a member survives, while a full volume or an emptyDir past its sizeLimit (every member
// evicted in the same minute) it does not.
var (
	// MinStorage is the smallest claim or emptyDir.sizeLimit the CRD accepts: it leaves
	// minQuota once walReserve is set aside.
	MinStorage = resource.MustParse("512Mi")
	// walReserve is room for the write-ahead log: the five segment files etcd keeps by default
	// plus the one it preallocates, 64 MB each.
	walReserve = resource.MustParse("384Mi")
	// minQuota is the smallest quota worth running a member with.
	minQuota = resource.MustParse("64Mi")
	// maxQuota is the largest quota etcd recommends; a bigger volume only gains headroom.
	maxQuota = resource.MustParse("8Gi")
)

// EtcdDefaultQuota is etcd's own backend quota (its quota.DefaultQuotaBytes, 2GiB), which a
// member started without --quota-backend-bytes keeps.
const EtcdDefaultQuota int64 = 2 << 30

// quotaBackendBytesFlag is etcd's flag for the backend quota.
const quotaBackendBytesFlag = "--quota-backend-bytes="

// QuotaBackendBytes is the backend quota for the cluster's storage: of the claim's size or
// the emptyDir's sizeLimit, what is left after walReserve, halved so that a second copy of the
// database fits beside it (a snapshot received from the leader is written next to the
// database before it replaces it, and defragmentation writes a new file too), at most
// maxQuota. ok is false when the spec sets no size (an emptyDir without sizeLimit: etcd keeps
// its default quota) or a size below MinStorage, which only an object stored before the CRD
// refused it can have: its members keep etcd's default quota, as they always had.
func QuotaBackendBytes(spec *api.EtcdClusterSpec) (bytes int64, ok bool) {
	size, ok := storageSize(spec)
	if !ok || size.Cmp(MinStorage) < 0 {
		return 0, false
	}
	quota := (size.Value() - walReserve.Value()) / 2
	quota = max(quota, minQuota.Value())
	return min(quota, maxQuota.Value()), true
}

// storageSize is the size of a member's data volume as the spec states it.
func storageSize(spec *api.EtcdClusterSpec) (resource.Quantity, bool) {
	s := spec.Storage
	switch {
	case s == nil:
		return resource.Quantity{}, false
	case s.VolumeClaimTemplate != nil:
		q, ok := s.VolumeClaimTemplate.Spec.Resources.Requests["storage"]
		return q, ok
	case s.EmptyDir != nil && s.EmptyDir.SizeLimit != nil:
		return *s.EmptyDir.SizeLimit, true
	}
	return resource.Quantity{}, false
}

// quotaArgs is the quota flag for etcd's command line, none when the spec sets no usable size.
func quotaArgs(spec *api.EtcdClusterSpec) []string {
	q, ok := QuotaBackendBytes(spec)
	if !ok {
		return nil
	}
	return []string{quotaBackendBytesFlag + strconv.FormatInt(q, 10)}
}
