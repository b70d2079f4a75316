package memberinit

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrDataLost is wrapped by Run's error when the member has started before and its data dir
// holds no data: etcd must not start on it (see the package comment).
var ErrDataLost = errors.New("member data lost")

// DataLostPrefix begins the termination message of a member-init that refused to start etcd
// because the member's data is lost; the operator reads it from the container's status.
const DataLostPrefix = "data-lost: "

// DefaultTerminationLog is where member-init writes its termination message by default: the
// kubelet's default terminationMessagePath.
const DefaultTerminationLog = "/dev/termination-log"

// maxTerminationMessage is the most of a termination message the kubelet keeps. It keeps the
// end of the file, so a longer message would lose its beginning, DataLostPrefix included.
const maxTerminationMessage = 4096

// dataLost is the error of a member that started before (told by how) and whose data dir
// holds no data.
func dataLost(id uint64, dataDir, how string) error {
	return fmt.Errorf("%w: member %x started before (%s) but data dir %s holds no data; not starting etcd, the operator replaces the member",
		ErrDataLost, id, how, dataDir)
}

// readMemberID reads the member ID the operator publishes in the file at path (a pod
// annotation, through the downward API) once the member has started: lowercase hex, without
// 0x. A missing path or file, or an empty one, means the member is not known to have started
// (ok false). Anything else that is not an ID is an error: member-init does not guess.
func readMemberID(path string) (id uint64, ok bool, err error) {
	if path == "" {
		return 0, false, nil
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("reading member ID file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, false, nil
	}
	id, err = strconv.ParseUint(s, 16, 64)
	if err != nil || id == 0 {
		return 0, false, fmt.Errorf("member ID file %s holds %.32q, not a member ID in hex", path, s)
	}
	return id, true, nil
}

// WriteTermination writes the termination message for err, Run's error, to the file at path
// (DefaultTerminationLog when path is empty): DataLostPrefix and the error's text when the
// member's data is lost, the error's text otherwise, cut to what the kubelet keeps.
func WriteTermination(path string, err error) error {
	if path == "" {
		path = DefaultTerminationLog
	}
	msg := err.Error()
	switch {
	case errors.Is(err, ErrDataLost):
		msg = DataLostPrefix + msg
	case errors.Is(err, ErrRestoreFailed):
		msg = RestoreFailedPrefix + msg
	}
	if len(msg) > maxTerminationMessage {
		msg = strings.ToValidUTF8(msg[:maxTerminationMessage], "") // a rune cut in two is dropped
	}
	if err := os.WriteFile(path, []byte(msg), 0o644); err != nil {
		return fmt.Errorf("writing termination message: %w", err)
	}
	return nil
}

// IsDataLostMessage reports whether msg, a container's terminated state's message, is that
// of a member-init that refused to start etcd because the member's data is lost.
func IsDataLostMessage(msg string) bool {
	return strings.HasPrefix(msg, DataLostPrefix)
}
