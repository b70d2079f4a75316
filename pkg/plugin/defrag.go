package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrQuorumAtRisk: the step would leave fewer members serving than a quorum.
var ErrQuorumAtRisk = errors.New("quorum at risk")

// defragOrder is the order members are defragmented in, one at a time: every member that
// answers but the leader, by ordinal, then the leader, whose pause costs the cluster an
// election timeout's worth of writes if it is long (and one leader change if it is longer).
// Members that do not answer are skipped, and returned apart. A member blocked by
// defragmentation serves nothing while it runs, so the order is refused when the voting
// members that answer, less the one blocked, would be fewer than a quorum (a cluster of one
// voting member excepted: there is no one else to serve).
func defragOrder(s *session) (order, skipped []*memberView, err error) {
	leader := s.leaderID()
	var last *memberView
	voters, answering := 0, 0
	for _, v := range s.members {
		if v.Member == nil {
			continue
		}
		if v.voter() {
			voters++
		}
		switch {
		case v.Status == nil:
			skipped = append(skipped, v)
			continue
		case v.voter():
			answering++
		}
		if v.Member.ID == leader {
			last = v
			continue
		}
		order = append(order, v)
	}
	if last != nil {
		order = append(order, last)
	}
	if quorum := voters/2 + 1; voters > 1 && answering-1 < quorum {
		var down []string
		for _, v := range skipped {
			down = append(down, fmt.Sprintf("%s (%v)", v.Name, v.Err))
		}
		return nil, nil, fmt.Errorf("etcdcluster %s: %w: %d of %d voting members answer, and one being defragmented would leave fewer than %d serving; "+
			"bring back %s first", s.cluster.Name, ErrQuorumAtRisk, answering, voters, quorum, strings.Join(down, ", "))
	}
	return order, skipped, nil
}

// runDefrag defragments the members one at a time, the leader last, with a line per member.
func runDefrag(ctx context.Context, env *Env, name string) error {
	s, err := open(ctx, env, name)
	if err != nil {
		return err
	}
	defer s.close()
	order, skipped, err := defragOrder(s)
	if err != nil {
		return err
	}
	for i, v := range order {
		fmt.Fprintf(env.Out, "[%d/%d] %s (%s): defragmenting %s ... ", i+1, len(order), v.Name, s.role(v), bytesIEC(v.Status.DBSize))
		start := env.Now()
		if err := s.client.Defragment(ctx, v.Endpoint); err != nil {
			fmt.Fprintln(env.Out, "failed")
			return fmt.Errorf("etcdcluster %s: %w", name, err)
		}
		took := fmt.Sprintf("%.1fs", env.Now().Sub(start).Seconds())
		st, err := s.client.Status(ctx, v.Endpoint)
		if err != nil {
			fmt.Fprintf(env.Out, "done in %s\n", took)
			continue
		}
		fmt.Fprintf(env.Out, "%s in %s\n", bytesIEC(st.DBSize), took)
	}
	if len(skipped) > 0 {
		var names []string
		for _, v := range skipped {
			names = append(names, fmt.Sprintf("%s (%v)", v.Name, v.Err))
		}
		return fmt.Errorf("etcdcluster %s: not defragmented, as they do not answer: %s", name, strings.Join(names, ", "))
	}
	return nil
}
