// Package peermove says where a running cluster's peers stand while they move on or off TLS
// (docs/tls.md, "Moving a running cluster's peers"), and where they go next. It is pure, so
// that the planner (pkg/cluster/plan), the pod builder (pkg/member) and the pass that observes
// the members (pkg/cluster) all decide from the same few functions.
//
// A plaintext and a TLS listener cannot share a port, so a member's peer URL never changes
// scheme on the same port: it goes through a second peer port, MovePort. Onto TLS the URLs go
// http:2380 -> https:2382 -> https:2380, off TLS the mirror. Each step (a hop) first has every
// member's pod listen on both ends of the hop (Next's Listen), then moves the URLs one member
// at a time (etcd's member update) to Next's Dest. Where a move stands is read from etcd's
// member list alone: the URLs say which hop it is on, and nothing else needs to be kept.
package peermove

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Ports a member's etcd listens on for its peers.
const (
	// PeerPort is the peer port of every member outside a move.
	PeerPort int32 = 2380
	// MovePort is the second peer port of a member while the peers move on or off TLS (2381
	// is the metrics port).
	MovePort int32 = 2382
)

// Endpoint is where a member's peer URL points, or where its pod's etcd listens for peers: a
// scheme (TLS or not) and a port, on the member's own host.
type Endpoint struct {
	TLS  bool
	Port int32
}

// Final is where the peers are outside a move: the peer port, over TLS with peer TLS.
func Final(tls bool) Endpoint { return Endpoint{TLS: tls, Port: PeerPort} }

// Middle is where a move toward Final(tls) goes first: the move port, in the final scheme.
func Middle(tls bool) Endpoint { return Endpoint{TLS: tls, Port: MovePort} }

// Scheme is the URL scheme of the endpoint.
func (e Endpoint) Scheme() string {
	if e.TLS {
		return "https"
	}
	return "http"
}

// String writes the endpoint as scheme:port ("https:2382"), as Parse reads it.
func (e Endpoint) String() string { return fmt.Sprintf("%s:%d", e.Scheme(), e.Port) }

// URL is the endpoint's URL on host.
func (e Endpoint) URL(host string) string { return fmt.Sprintf("%s://%s:%d", e.Scheme(), host, e.Port) }

// Parse reads an endpoint written by String.
func Parse(s string) (Endpoint, bool) {
	scheme, port, ok := strings.Cut(s, ":")
	if !ok {
		return Endpoint{}, false
	}
	return endpoint(scheme, port)
}

// Of is the endpoint of a URL (scheme://host:port; the port may be left out only for
// etcd's default, PeerPort). ok is false for anything else.
func Of(u string) (Endpoint, bool) {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return Endpoint{}, false
	}
	hostport, _, _ := strings.Cut(rest, "/")
	i := strings.LastIndex(hostport, ":")
	if i < 0 || strings.HasSuffix(hostport, "]") {
		return endpoint(scheme, strconv.Itoa(int(PeerPort)))
	}
	return endpoint(scheme, hostport[i+1:])
}

// Host is the host of a URL (scheme://host:port); empty when it has none.
func Host(u string) string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return ""
	}
	hostport, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(hostport, ":"); i >= 0 && !strings.HasSuffix(hostport, "]") {
		return hostport[:i]
	}
	return hostport
}

// Moved is peer URL u moved to endpoint e, on the same host.
func Moved(u string, e Endpoint) string { return e.URL(Host(u)) }

func endpoint(scheme, port string) (Endpoint, bool) {
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil || (scheme != "http" && scheme != "https") {
		return Endpoint{}, false
	}
	return Endpoint{TLS: scheme == "https", Port: int32(p)}, true
}

// Listen is the set of endpoints a member pod's etcd listens on for its peers, in a fixed
// order (port, then plaintext first): pods built from the same set are built alike.
type Listen []Endpoint

// NewListen is the set of the given endpoints, in Listen's order.
func NewListen(eps ...Endpoint) Listen {
	out := Listen{}
	for _, e := range eps {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, compare)
	return out
}

func compare(a, b Endpoint) int {
	if a.Port != b.Port {
		return int(a.Port - b.Port)
	}
	switch {
	case a.TLS == b.TLS:
		return 0
	case b.TLS:
		return -1
	}
	return 1
}

// Has reports whether the set holds e.
func (l Listen) Has(e Endpoint) bool { return slices.Contains(l, e) }

// TLS reports whether one of the endpoints takes TLS: the pod then needs its peer
// certificates (and dials its peers' TLS endpoints with them).
func (l Listen) TLS() bool {
	return slices.ContainsFunc(l, func(e Endpoint) bool { return e.TLS })
}

// Equal reports whether both sets hold the same endpoints.
func (l Listen) Equal(o Listen) bool { return slices.Equal(NewListen(l...), NewListen(o...)) }

// String writes the set as its endpoints joined by commas, as ParseListen reads it.
func (l Listen) String() string {
	parts := make([]string, 0, len(l))
	for _, e := range l {
		parts = append(parts, e.String())
	}
	return strings.Join(parts, ",")
}

// ParseListen reads a set written by String; ok is false for anything else, or for none.
func ParseListen(s string) (Listen, bool) {
	var out []Endpoint
	for _, part := range strings.Split(s, ",") {
		e, ok := Parse(part)
		if !ok {
			return nil, false
		}
		out = append(out, e)
	}
	return NewListen(out...), len(out) > 0
}
