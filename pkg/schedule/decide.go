package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// Bounds of a schedule.
const (
	// startingDeadline is how late a scheduled time may still be taken: after the operator
	// was down, or the schedule suspended, the most recent time missed is taken once if it is
	// less than this old, and none older (never a burst of catch-up backups).
	startingDeadline = time.Hour
	// keepFailed is how many of its newest Failed backups a schedule keeps, for diagnosis;
	// older Failed ones are deleted.
	keepFailed = 3
)

// errNeverRuns is a schedule that names no time in the five years robfig/cron looks ahead
// ("0 0 30 2 *").
var errNeverRuns = errors.New("it names no time in the next five years")

// parse reads spec.schedule in spec.timeZone (UTC when empty).
func parse(spec api.EtcdBackupScheduleSpec) (*cron.SpecSchedule, error) {
	loc := time.UTC
	if spec.TimeZone != "" {
		if spec.TimeZone == "Local" {
			return nil, fmt.Errorf("timeZone %q is not an IANA name", spec.TimeZone)
		}
		l, err := time.LoadLocation(spec.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("timeZone %q: %w", spec.TimeZone, err)
		}
		loc = l
	}
	if strings.Contains(spec.Schedule, "TZ=") {
		return nil, fmt.Errorf("schedule %q sets a time zone: use spec.timeZone", spec.Schedule)
	}
	parsed, err := cron.ParseStandard(spec.Schedule)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", spec.Schedule, err)
	}
	s, ok := parsed.(*cron.SpecSchedule)
	if !ok { // @every: a delay, not times of the clock
		return nil, fmt.Errorf("schedule %q: @every is not supported", spec.Schedule)
	}
	s.Location = loc
	return s, nil
}

// owned is what a pass needs of an EtcdBackup the schedule created.
type owned struct {
	name string
	uid  types.UID
	// scheduled is the scheduled time the backup was made for.
	scheduled time.Time
	phase     api.BackupPhase
	// completed is the backup's status.completionTime (zero if none).
	completed time.Time
	// deleting: the backup has a deletionTimestamp.
	deleting bool
}

// final says whether the backup has succeeded or failed.
func (o owned) final() bool { return o.phase == api.BackupSucceeded || o.phase == api.BackupFailed }

// lastScheduled is the latest scheduled time a backup was made for: that of the newest
// backup the schedule owns, or status.lastScheduleTime if later (the newest was deleted by
// hand), or the schedule's creation when neither is known. It is derived again on every
// pass, so a status write that was dropped changes nothing.
func lastScheduled(created, status time.Time, backups []owned) time.Time {
	last := created
	if status.After(last) {
		last = status
	}
	for _, b := range backups {
		if b.scheduled.After(last) {
			last = b.scheduled
		}
	}
	return last
}

// due is the scheduled time to take a backup for at now: the most recent scheduled time
// after last and at or before now, if it is less than startingDeadline old. missed reports
// a scheduled time after last that is too old to take, with nothing due.
func due(s cron.Schedule, last, now time.Time) (at time.Time, missed bool) {
	first := s.Next(last)
	if first.IsZero() || first.After(now) {
		return time.Time{}, false
	}
	from := last
	if floor := now.Add(-startingDeadline); floor.After(from) {
		from = floor
	}
	// At most startingDeadline / 1 minute steps: cron's times are whole minutes.
	for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
		at = t
	}
	return at, at.IsZero()
}

// expired are the backups retention deletes: the Succeeded ones beyond the newest keep, and
// the Failed ones beyond the newest keepFailed. Backups being deleted are neither counted
// nor returned; those not final yet are never touched.
func expired(backups []owned, keep int32) []owned {
	var succeeded, failed []owned
	for _, b := range backups {
		switch {
		case b.deleting:
		case b.phase == api.BackupSucceeded:
			succeeded = append(succeeded, b)
		case b.phase == api.BackupFailed:
			failed = append(failed, b)
		}
	}
	keep = max(keep, 1) // the last Succeeded backup is never deleted
	var out []owned
	for _, group := range []struct {
		backups []owned
		keep    int
	}{{succeeded, int(keep)}, {failed, keepFailed}} {
		slices.SortFunc(group.backups, newestFirst)
		if len(group.backups) > group.keep {
			out = append(out, group.backups[group.keep:]...)
		}
	}
	return out
}

// newestFirst orders backups by scheduled time, newest first, then by name.
func newestFirst(a, b owned) int {
	if c := b.scheduled.Compare(a.scheduled); c != 0 {
		return c
	}
	return strings.Compare(b.name, a.name)
}

// active are the names of the backups neither final nor being deleted, sorted.
func active(backups []owned) []string {
	var names []string
	for _, b := range backups {
		if !b.final() && !b.deleting {
			names = append(names, b.name)
		}
	}
	slices.Sort(names)
	return names
}

// lastSucceeded is when the newest Succeeded backup completed, or status if later (that
// backup deleted since).
func lastSucceeded(status time.Time, backups []owned) time.Time {
	last := status
	for _, b := range backups {
		if b.phase == api.BackupSucceeded && b.completed.After(last) {
			last = b.completed
		}
	}
	return last
}
