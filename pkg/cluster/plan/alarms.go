package plan

import (
	"fmt"
	"strings"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil/etcdfacts"
	"github.com/etcd-operator/etcd-operator/pkg/member/naming"
)

// etcd's alarms. A NOSPACE or CORRUPT alarm, raised by any member, makes the whole cluster
// refuse writes until it is disarmed: Available is then False, and Degraded names the alarm
// and the member. The operator only reports them: clearing NOSPACE means compacting and
// defragmenting (which briefly blocks the member) and disarming, and a CORRUPT member needs a
// person to decide which data is right; docs/status.md says how.

// AlarmView is one alarm as a pass saw it.
type AlarmView struct {
	// Ordinal of the member that raised it; -1 when the member is not one of the operator's.
	Ordinal  int
	MemberID uint64
	Type     etcdfacts.AlarmType
}

// WriteAlarm is the first alarm that blocks writes, CORRUPT before NOSPACE, and the reason
// that names it.
func WriteAlarm(s State) (api.ConditionReason, string, bool) {
	for _, want := range []struct {
		t      etcdfacts.AlarmType
		reason api.ConditionReason
		what   string
	}{
		{etcdfacts.AlarmCorrupt, api.ReasonAlarmCorrupt, "its data differs from the other members'"},
		{etcdfacts.AlarmNoSpace, api.ReasonAlarmNoSpace, "its backend reached its quota"},
	} {
		var on []string
		for _, a := range s.Alarms {
			if a.Type == want.t {
				on = append(on, alarmMember(s, a))
			}
		}
		if len(on) > 0 {
			return want.reason, fmt.Sprintf("etcd alarm %s raised by %s (%s): the cluster refuses writes until it is cleared; see the README on alarms",
				want.t, strings.Join(on, ", "), want.what), true
		}
	}
	return "", "", false
}

func alarmMember(s State, a AlarmView) string {
	if a.Ordinal < 0 {
		return "member " + naming.FormatID(a.MemberID)
	}
	return fmt.Sprintf("%s (%s)", naming.Name(s.Name, a.Ordinal), naming.FormatID(a.MemberID))
}

// Alarmed: an alarm blocks writes.
func Alarmed(s State) bool {
	_, _, ok := WriteAlarm(s)
	return ok
}
