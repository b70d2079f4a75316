package operator

import (
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/tools/cache"
)

// defaultGCPercent is the operator's GOGC when $GOGC is not set. Its live heap is small (the
// API schemes, the filtered caches) and it allocates little between passes, so the heap the
// Go default of 100 lets it grow to before collecting is mostly garbage: collecting more often
// keeps less resident for no measurable CPU (docs/figures.md has the readings).
const defaultGCPercent = 25

// memoryLimitShare is the share of the container's memory limit given to the Go heap as its
// soft limit; the rest covers stacks, the runtime and what the kernel counts beside the heap.
const memoryLimitShare = 0.9

// cgroupMemoryLimitFiles hold the container's memory limit under cgroup v2 and v1.
var cgroupMemoryLimitFiles = []string{
	"/sys/fs/cgroup/memory.max",
	"/sys/fs/cgroup/memory/memory.limit_in_bytes",
}

// TuneMemory sets the garbage collector's target (defaultGCPercent unless $GOGC is set)
// and its soft memory limit (see setMemoryLimit).
func TuneMemory(log *logrus.Entry) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	setMemoryLimit(log)
}

// setMemoryLimit gives the Go runtime a soft memory limit below the container's limit, so
// the garbage collector works harder before the kernel kills the process. An explicit
// $GOMEMLIMIT wins; without a cgroup limit nothing changes.
func setMemoryLimit(log *logrus.Entry) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	for _, f := range cgroupMemoryLimitFiles {
		limit, ok := readCgroupLimit(f)
		if !ok {
			continue
		}
		soft := int64(float64(limit) * memoryLimitShare)
		debug.SetMemoryLimit(soft)
		log.WithFields(logrus.Fields{"container_limit": limit, "go_memory_limit": soft}).Info("Set the Go memory limit")
		return
	}
}

// readCgroupLimit parses a cgroup memory limit file; ok is false for "max", absurdly large
// values (cgroup v1's "unlimited") and unreadable files.
func readCgroupLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<60 {
		return 0, false
	}
	return n, true
}

// dropInitPagesOnceSynced drops the pages of the binary that only its start touched
// (dropInitPages) once the caches have synced: by then every package has initialized, and
// what the passes use comes back as they run.
func dropInitPagesOnceSynced(ctx context.Context, synced cache.InformerSynced, log *logrus.Entry) {
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return
	}
	log.WithField("bytes", dropInitPages(log)).Debug("Dropped the binary's pages from the resident set")
}
