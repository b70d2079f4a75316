package peermove

import (
	"math/rand/v2"
	"testing"
)

var (
	h0, s0 = Final(false), Final(true)
	h2, s2 = Middle(false), Middle(true)
)

func TestNext(t *testing.T) {
	for _, tc := range []struct {
		name       string
		urls       []Endpoint
		final      Endpoint
		listen     Listen
		dest, join Endpoint
		problem    bool
	}{
		{"no move", []Endpoint{h0, h0, h0}, h0, Listen{h0}, h0, h0, false},
		{"no move, TLS", []Endpoint{s0, s0}, s0, Listen{s0}, s0, s0, false},
		{"no members", nil, s0, Listen{s0}, s0, s0, false},
		{"onto TLS starts", []Endpoint{h0, h0, h0}, s0, Listen{h0, s2}, s2, h0, false},
		{"onto TLS, first hop", []Endpoint{s2, h0, h0}, s0, Listen{h0, s2}, s2, h0, false},
		{"onto TLS, second hop", []Endpoint{s2, s2, s2}, s0, Listen{s0, s2}, s0, s2, false},
		{"onto TLS, second hop under way", []Endpoint{s0, s2, s2}, s0, Listen{s0, s2}, s0, s0, false},
		{"off TLS starts", []Endpoint{s0, s0, s0}, h0, Listen{s0, h2}, h2, s0, false},
		{"off TLS, second hop", []Endpoint{h2, h0, h2}, h0, Listen{h0, h2}, h0, h0, false},
		{"set back in the first hop", []Endpoint{s2, h0, h0}, h0, Listen{h0, s2}, h0, h0, false},
		{"set back at the end of the first hop", []Endpoint{s2, s2, s2}, h0, Listen{h0, s2}, h0, s2, false},
		{"set back in the second hop: its URLs come back to the move port's scheme first", []Endpoint{h0, h2, h2}, s0, Listen{h0, h2}, h0, h0, false},
		{"both schemes on one port", []Endpoint{h0, s0}, s0, Listen{h0, s0}, s0, s0, true},
		{"three endpoints", []Endpoint{h0, s2, h2}, s0, Listen{h0, h2, s2}, s0, s0, true},
		{"another port", []Endpoint{{Port: 7001}}, h0, Listen{{Port: 7001}}, h0, h0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(tc.urls, tc.final)
			if !got.Listen.Equal(tc.listen) || (!tc.problem && (got.Dest != tc.dest || got.Join != tc.join)) || (got.Problem != "") != tc.problem {
				t.Errorf("Next(%v, %v) = %+v, want listen %v dest %v join %v problem %v", tc.urls, tc.final, got, tc.listen, tc.dest, tc.join, tc.problem)
			}
		})
	}
}

// TestNextWalks moves random clusters' URLs one at a time as the planner does, with the spec
// flipped at random moments, and checks at every step what keeps every member reachable: the
// pods (made listening on Next's Listen before any URL moves) listen on every endpoint a URL
// is at, and on where the next URL moves; no set holds two endpoints on one port; a URL move
// leaves Listen as it was, unless it was the last of its hop; and once the spec stops
// changing, the move ends where it puts the URLs, within two hops and a hop back.
func TestNextWalks(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2382))
	for run := range 2000 {
		n := 1 + rng.IntN(5)
		final := Final(rng.IntN(2) == 0)
		urls := make([]Endpoint, n)
		for i := range urls {
			urls[i] = Final(!final.TLS)
		}
		listen := Next(urls, final).Listen // the pods, rolled onto the first hop
		flips := rng.IntN(4)
		for steps := 0; ; steps++ {
			step := Next(urls, final)
			if step.Problem != "" {
				t.Fatalf("run %d: %v toward %v: %s", run, urls, final, step.Problem)
			}
			for _, u := range urls {
				if !step.Listen.Has(u) || !listen.Has(u) {
					t.Fatalf("run %d: URL at %v, pods listen on %v, built now on %v", run, u, listen, step.Listen)
				}
			}
			if len(step.Listen) > 2 || (len(step.Listen) == 2 && step.Listen[0].Port == step.Listen[1].Port) {
				t.Fatalf("run %d: pods built listening on %v", run, step.Listen)
			}
			if !step.Listen.Has(step.Dest) || !step.Listen.Has(step.Join) {
				t.Fatalf("run %d: dest %v, join %v outside %v", run, step.Dest, step.Join, step.Listen)
			}
			if flips > 0 && rng.IntN(3) == 0 {
				flips--
				final = Final(!final.TLS)
				listen, steps = Next(urls, final).Listen, 0
				continue
			}
			if step.Done(final) {
				break
			}
			if steps > 4*n+8 {
				t.Fatalf("run %d: not done after %d steps: %v toward %v", run, steps, urls, final)
			}
			if !listen.Equal(step.Listen) {
				listen = step.Listen // the rollout, before any URL moves
				continue
			}
			moved := false
			for i, u := range urls {
				if u != step.Dest {
					urls[i], moved = step.Dest, true
					break
				}
			}
			if !moved {
				t.Fatalf("run %d: nothing to move and not done: %v, %+v", run, urls, step)
			}
			if after := Next(urls, final); !after.Listen.Equal(step.Listen) && !allAt(urls, step.Dest) {
				t.Fatalf("run %d: a URL move within a hop changed the listeners from %v to %v", run, step.Listen, after.Listen)
			}
		}
	}
}

func allAt(urls []Endpoint, e Endpoint) bool {
	for _, u := range urls {
		if u != e {
			return false
		}
	}
	return true
}

func TestEndpointsRoundTrip(t *testing.T) {
	for _, u := range []string{"http://demo-0.ns.svc:2380", "https://demo-0.demo.ns.svc:2382", "https://10.0.0.1:2380"} {
		e, ok := Of(u)
		if !ok || e.URL(Host(u)) != u || Moved(u, e) != u {
			t.Errorf("%s: endpoint %v (%v), host %q", u, e, ok, Host(u))
		}
	}
	if got := Moved("http://demo-1.ns.svc:2380", s2); got != "https://demo-1.ns.svc:2382" {
		t.Errorf("moved to %s", got)
	}
	l, ok := ParseListen(NewListen(s2, h0).String())
	if !ok || !l.Equal(Listen{h0, s2}) || l[0] != h0 {
		t.Errorf("listen read back %v %v", l, ok)
	}
	if _, ok := ParseListen(""); ok {
		t.Error("an empty listen set read")
	}
}
