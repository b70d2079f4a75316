package peermove

import (
	"fmt"
	"slices"
)

// Step is where the peers go from where their URLs are now.
type Step struct {
	// Listen is what every member pod listens on while the URLs are where they are: every
	// endpoint a URL is at, and the one they move to. A URL move never changes it, but the
	// last of a hop's: the pods are rolled onto the next hop's set only once no URL is left
	// on an endpoint it lacks.
	Listen Listen
	// Dest is where the next URL moves; a member whose URL is elsewhere moves there.
	Dest Endpoint
	// Join is where a member added now gets its URL: on an endpoint some member is at
	// already, so that adding it changes neither Listen nor Dest.
	Join Endpoint
	// Problem, when set, says that the URLs are where no move leads (the operator never
	// puts them there): nothing is moved.
	Problem string
}

// Done reports whether the peers are where final is, and the pods listen there alone.
func (s Step) Done(final Endpoint) bool { return s.Listen.Equal(Listen{final}) }

// Next is the move's step from the endpoints of the members' peer URLs (urls), toward final.
//
//   - every URL at final: listen there alone; nothing moves.
//   - every URL on the peer port in the other scheme (the move starts): listen on it and on
//     the move port in final's scheme (Middle), and move there.
//   - every URL on the move port: listen on it and on final, and move to final.
//   - URLs on two endpoints (a hop under way, or set back halfway): listen on both; move to
//     final if one is final, else to Middle if one is Middle (the hop goes on), else to the
//     one on the peer port (a hop set back: its URLs come back first, then the move starts
//     again in final's direction).
//
// Every set Listen names holds every endpoint a URL is at, and no two endpoints on one port.
func Next(urls []Endpoint, final Endpoint) Step {
	at := NewListen(urls...)
	for _, e := range at {
		if e.Port != PeerPort && e.Port != MovePort {
			return Step{Listen: at, Dest: final, Join: final, Problem: fmt.Sprintf("a peer URL is on port %d, which the operator never uses", e.Port)}
		}
	}
	middle := Middle(final.TLS)
	switch {
	case len(at) == 0 || at.Equal(Listen{final}):
		return Step{Listen: Listen{final}, Dest: final, Join: final}
	case len(at) == 1 && at[0].Port == PeerPort:
		return Step{Listen: NewListen(at[0], middle), Dest: middle, Join: at[0]}
	case len(at) == 1:
		return Step{Listen: NewListen(at[0], final), Dest: final, Join: at[0]}
	case len(at) > 2 || at[0].Port == at[1].Port:
		return Step{Listen: at, Dest: final, Join: final, Problem: fmt.Sprintf("the peer URLs are on %s at once, which no move leads through", at)}
	}
	step := Step{Listen: at, Join: at[0]}
	switch {
	case at.Has(final):
		step.Dest = final
	case at.Has(middle):
		step.Dest = middle
	default:
		step.Dest = at[slices.IndexFunc(at, func(e Endpoint) bool { return e.Port == PeerPort })]
	}
	return step
}
