package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// choose picks the member to take the snapshot from: one that answers, votes, follows a
// leader and answers a linearizable read through itself alone (which needs the leader and a
// quorum), so the snapshot is current. Followers are tried before the leader, which has the
// most to do. It returns a FailureNoQuorum Failure when no member qualifies.
func choose(ctx context.Context, members []Endpoint, conn etcdutil.ConnConfig, f etcdutil.Factory, log *logrus.Entry) (Endpoint, etcdutil.Status, error) {
	if len(members) == 0 {
		return Endpoint{}, etcdutil.Status{}, fail(FailureNoQuorum, errors.New("the cluster has no member to take a snapshot from"))
	}
	urls := make([]string, len(members))
	for i, m := range members {
		urls[i] = m.URL
	}
	cli, err := f.New(urls, conn)
	if err != nil {
		return Endpoint{}, etcdutil.Status{}, fail(FailureError, err)
	}
	defer cli.Close()
	var followers, leaders []int
	statuses := make([]etcdutil.Status, len(members))
	var why []string
	for i, m := range members {
		st, err := cli.Status(ctx, m.URL)
		switch {
		case err != nil:
			why = append(why, fmt.Sprintf("%s: %v", m.Name, err))
		case st.IsLearner:
			why = append(why, m.Name+": a learner")
		case st.Leader == 0:
			why = append(why, m.Name+": follows no leader")
		case st.Leader == st.ID:
			leaders = append(leaders, i)
		default:
			followers = append(followers, i)
		}
		statuses[i] = st
	}
	for _, i := range append(followers, leaders...) {
		m := members[i]
		if err := linearizable(ctx, m, conn, f); err != nil {
			why = append(why, fmt.Sprintf("%s: no linearizable read: %v", m.Name, err))
			continue
		}
		log.WithField("member", m.Name).WithField("leader", statuses[i].Leader == statuses[i].ID).Info("Taking the snapshot from this member")
		return m, statuses[i], nil
	}
	return Endpoint{}, etcdutil.Status{}, fail(FailureNoQuorum, fmt.Errorf("no member follows a leader with quorum (%s)", strings.Join(why, "; ")))
}

// linearizable asks the member m alone for the member list, a linearizable read: it answers
// only once the leader has confirmed, with a quorum, that m has applied everything committed.
func linearizable(ctx context.Context, m Endpoint, conn etcdutil.ConnConfig, f etcdutil.Factory) error {
	cli, err := f.New([]string{m.URL}, conn)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.MemberList(ctx)
	return err
}
