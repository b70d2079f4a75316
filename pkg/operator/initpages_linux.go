package operator

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// dropInitPages takes the pages of the operator's own binary out of its resident set
// (madvise MADV_DONTNEED over the binary's read-only mappings), once its caches have synced.
// Many of them are touched only while the packages initialize (client-go's scheme registers
// every built-in API group, the generated clients and the API types theirs) and never again;
// those a pass needs come back on their first touch, from the page cache, which keeps them.
// Only mappings that cannot have been written are dropped: MADV_DONTNEED discards what was
// written to a private mapping. It returns how many bytes of mappings it dropped.
func dropInitPages(log *logrus.Entry) int {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		log.WithError(err).Debug("Not dropping the binary's init pages: its path is unknown")
		return 0
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		log.WithError(err).Debug("Not dropping the binary's init pages: its mappings are unknown")
		return 0
	}
	defer f.Close()
	dropped := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		start, end, ok := readOnlyMappingOf(s.Text(), exe)
		if !ok {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_DONTNEED); errno != 0 {
			log.WithError(errno).Debug("Dropping the binary's init pages failed")
			continue
		}
		dropped += int(end - start)
	}
	return dropped
}

// readOnlyMappingOf reads a line of /proc/self/maps ("start-end perms offset dev inode path")
// and returns the range when it maps path without write permission.
func readOnlyMappingOf(line, path string) (start, end uintptr, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[5] != path || strings.Contains(fields[1], "w") {
		return 0, 0, false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	a, err1 := strconv.ParseUint(lo, 16, 64)
	b, err2 := strconv.ParseUint(hi, 16, 64)
	if !found || err1 != nil || err2 != nil || b <= a {
		return 0, 0, false
	}
	return uintptr(a), uintptr(b), true
}
