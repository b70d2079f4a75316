package plugin

import (
	"context"
	"fmt"
	"io"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// alarmRow is one alarm raised in the cluster, with the name of the member that raised it.
type alarmRow struct {
	Member string
	Alarm  etcdutil.Alarm
}

// listAlarms are the alarms raised in the cluster, each named by its member.
func listAlarms(ctx context.Context, s *session) ([]alarmRow, error) {
	alarms, err := s.client.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcdcluster %s: %w", s.cluster.Name, err)
	}
	rows := make([]alarmRow, 0, len(alarms))
	for _, a := range alarms {
		name := member.FormatID(a.MemberID)
		for _, v := range s.members {
			if v.Member != nil && v.Member.ID == a.MemberID {
				name = v.Name
			}
		}
		rows = append(rows, alarmRow{Member: name, Alarm: a})
	}
	return rows, nil
}

func printAlarms(w io.Writer, rows []alarmRow) {
	t := newTable(w)
	row(t, "MEMBER", "ID", "ALARM")
	for _, r := range rows {
		row(t, r.Member, member.FormatID(r.Alarm.MemberID), string(r.Alarm.Type))
	}
	_ = t.Flush()
}

// runAlarmList prints the alarms raised in the cluster; with none, it says so on ErrOut and
// prints nothing, as kubectl get does with no resources.
func runAlarmList(ctx context.Context, env *Env, name string) error {
	s, rows, err := openAlarms(ctx, env, name)
	if s == nil || err != nil {
		return err
	}
	defer s.close()
	printAlarms(env.Out, rows)
	return nil
}

// openAlarms opens a session to the cluster and lists its alarms. With none, it says so on
// ErrOut, closes the session and returns it nil: there is nothing more to do.
func openAlarms(ctx context.Context, env *Env, name string) (*session, []alarmRow, error) {
	s, err := open(ctx, env, name)
	if err != nil {
		return nil, nil, err
	}
	rows, err := listAlarms(ctx, s)
	if err != nil || len(rows) == 0 {
		s.close()
		if err == nil {
			fmt.Fprintf(env.ErrOut, "No alarms in etcdcluster %s/%s.\n", env.Namespace, name)
		}
		return nil, nil, err
	}
	return s, rows, nil
}

// runAlarmDisarm clears every alarm raised in the cluster, and warns of a member whose backend
// is still at its quota: etcd raises NOSPACE again at its next write.
func runAlarmDisarm(ctx context.Context, env *Env, name string) error {
	s, rows, err := openAlarms(ctx, env, name)
	if s == nil || err != nil {
		return err
	}
	defer s.close()
	for _, r := range rows {
		if err := s.client.AlarmDisarm(ctx, r.Alarm); err != nil {
			return fmt.Errorf("etcdcluster %s: %w", name, err)
		}
		fmt.Fprintf(env.Out, "%s: %s disarmed\n", r.Member, r.Alarm.Type)
	}
	for _, w := range stillFull(s) {
		fmt.Fprintf(env.ErrOut, "Warning: %s\n", w)
	}
	return nil
}

// stillFull warns of each member whose backend is at its quota: etcd raises NOSPACE again at
// its next write, until the space is given back.
func stillFull(s *session) []string {
	var out []string
	q := quota(s.cluster)
	for _, v := range s.members {
		if v.Status != nil && v.Status.DBSize >= q {
			out = append(out, fmt.Sprintf("%s's database (%s) is at its quota (%s): etcd raises NOSPACE again at its next write; "+
				"kubectl etcd compact %s, then kubectl etcd defrag %s, give the space back", v.Name, bytesIEC(v.Status.DBSize), bytesIEC(q), s.cluster.Name, s.cluster.Name))
		}
	}
	return out
}
