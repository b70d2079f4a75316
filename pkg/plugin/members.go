package plugin

import (
	"context"
	"io"
	"strings"

	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// runMembers prints etcd's member list, as etcdctl member list does, by member name.
func runMembers(ctx context.Context, env *Env, name string) error {
	s, err := open(ctx, env, name)
	if err != nil {
		return err
	}
	defer s.close()
	printMembers(env.Out, s)
	return nil
}

func printMembers(w io.Writer, s *session) {
	t := newTable(w)
	row(t, "NAME", "ID", "ROLE", "STARTED", "PEER URLS", "CLIENT URLS")
	for _, v := range s.members {
		m := v.Member
		if m == nil {
			continue
		}
		role := "voter"
		if m.IsLearner {
			role = "learner"
		}
		started := "true"
		if m.Name == "" {
			// etcd lists a member with its name once it has started and published it.
			started = "false"
		}
		row(t, orDash(v.Name), member.FormatID(m.ID), role, started, orDash(strings.Join(m.PeerURLs, ",")), orDash(strings.Join(m.ClientURLs, ",")))
	}
	_ = t.Flush()
}
