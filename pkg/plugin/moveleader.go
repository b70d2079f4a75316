package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrNoTransferee: no member may take leadership.
var ErrNoTransferee = errors.New("no member can take leadership")

// transferee is the member leadership goes to: the one named by to, which must be a voting
// member other than the leader that answers; or, with to empty, the healthiest other voter:
// one that answers, reports no error (alarm) and follows the current leader, the furthest
// along the raft log (applied index), the lowest ordinal of equals.
func transferee(s *session, leader *memberView, to string) (*memberView, error) {
	if to != "" {
		i := slices.IndexFunc(s.members, func(v *memberView) bool { return v.Name == to })
		switch {
		case i < 0 || s.members[i].Member == nil:
			return nil, fmt.Errorf("%s is not a member of etcdcluster %s", to, s.cluster.Name)
		case s.members[i] == leader:
			return s.members[i], nil
		case !s.members[i].voter():
			return nil, fmt.Errorf("%s is a learner: only a voting member can lead", to)
		case s.members[i].Status == nil:
			return nil, fmt.Errorf("%s cannot take leadership: %w", to, s.members[i].Err)
		}
		return s.members[i], nil
	}
	var best *memberView
	for _, v := range s.members {
		if v == leader || !v.voter() || v.Status == nil || len(v.Status.Errors) > 0 || v.Status.Leader != leader.Member.ID {
			continue
		}
		if best == nil || v.Status.RaftAppliedIndex > best.Status.RaftAppliedIndex {
			best = v
		}
	}
	if best == nil {
		return nil, fmt.Errorf("etcdcluster %s: %w: no other voting member answers healthy and follows %s", s.cluster.Name, ErrNoTransferee, leader.Name)
	}
	return best, nil
}

// leader is the view of the member that leads, which must answer.
func (s *session) leader() (*memberView, error) {
	id := s.leaderID()
	for _, v := range s.members {
		if id != 0 && v.Member != nil && v.Member.ID == id {
			if v.Status == nil {
				return nil, fmt.Errorf("etcdcluster %s: the leader %s does not answer: %w", s.cluster.Name, v.Name, v.Err)
			}
			return v, nil
		}
	}
	return nil, fmt.Errorf("etcdcluster %s: no member reports a leader", s.cluster.Name)
}

// runMoveLeader hands leadership to the member --to names, or to the healthiest other voter.
func runMoveLeader(ctx context.Context, env *Env, name, to string) error {
	s, err := open(ctx, env, name)
	if err != nil {
		return err
	}
	defer s.close()
	leader, err := s.leader()
	if err != nil {
		return err
	}
	target, err := transferee(s, leader, to)
	if err != nil {
		return err
	}
	if target == leader {
		fmt.Fprintf(env.Out, "%s leads already\n", leader.Name)
		return nil
	}
	if err := s.client.MoveLeader(ctx, leader.Endpoint, target.Member.ID); err != nil {
		return fmt.Errorf("etcdcluster %s: %w", name, err)
	}
	fmt.Fprintf(env.Out, "leadership moved from %s to %s\n", leader.Name, target.Name)
	return nil
}
