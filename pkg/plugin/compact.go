package plugin

import (
	"context"
	"fmt"
)

// runCompact drops the history of every key before the cluster's current revision; with
// physical it returns once every member has removed it from its backend. The space is given
// back to the file system by defrag only.
func runCompact(ctx context.Context, env *Env, name string, physical bool) error {
	s, err := open(ctx, env, name)
	if err != nil {
		return err
	}
	defer s.close()
	rev, err := s.client.Compact(ctx, physical)
	if err != nil {
		return fmt.Errorf("etcdcluster %s: %w", name, err)
	}
	how := ""
	if physical {
		how = ", physically"
	}
	fmt.Fprintf(env.Out, "compacted etcdcluster %s to revision %d%s\n", name, rev, how)
	return nil
}
