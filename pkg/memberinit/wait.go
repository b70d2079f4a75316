package memberinit

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/dnsutil"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// progressEvery bounds how often a waiting member logs: one line per change of what it
// sees, no more than one per progressEvery.
const progressEvery = 5 * time.Second

// waitServed returns once cluster DNS serves the host of every endpoint, or o.DNSWait after
// it started asking, or at once without o.DNS. Opening a client resolves the endpoints'
// names: a "no such host" for a member whose record cluster DNS has not caught up with would
// be cached for CoreDNS's negative-cache TTL (see dnsutil.TrustAfter), for this member's etcd
// and the others to meet too.
func waitServed(ctx context.Context, o Options, log *logrus.Entry) error {
	if o.DNS == nil {
		return nil
	}
	start := time.Now()
	pending := map[string]bool{}
	for _, e := range o.Endpoints {
		u, _ := url.Parse(e) // Validate has parsed every endpoint
		pending[u.Hostname()] = true
	}
	ticker := time.NewTicker(o.PollInterval)
	defer ticker.Stop()
	logged := false
	for {
		var lastErr error
		for host := range pending {
			qctx, cancel := context.WithTimeout(ctx, dnsutil.DefaultTimeout)
			ok, err := o.DNS.Serves(qctx, host)
			cancel()
			if ok {
				delete(pending, host)
			} else if err != nil {
				lastErr = err
			}
		}
		switch waited := time.Since(start); {
		case len(pending) == 0:
			if logged {
				log.WithField("waited", waited.Round(time.Millisecond)).Info("cluster DNS serves the members' names")
			}
			return nil
		case waited >= o.DNSWait:
			log.WithError(lastErr).WithField("notServed", strings.Join(slices.Sorted(maps.Keys(pending)), ",")).
				Warn("cluster DNS does not confirm the members' names; dialling them anyway")
			return nil
		case !logged:
			log.WithError(lastErr).WithField("notServed", strings.Join(slices.Sorted(maps.Keys(pending)), ",")).
				Info("waiting for cluster DNS to serve the members' names")
			logged = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for cluster DNS to serve %v: %w", slices.Sorted(maps.Keys(pending)), ctx.Err())
		case <-ticker.C:
		}
	}
}

// waitAdded polls the member list until it lists o.PeerURL or ctx ends. A member listed with
// a name has started before: it is refused, as its data dir holds no data.
func waitAdded(ctx context.Context, o Options, cli etcdutil.Client, log *logrus.Entry) error {
	start := time.Now()
	log.Info("waiting for the operator to add this member")
	p := progress{log: log, state: stateNotListed, logged: start}
	ticker := time.NewTicker(o.PollInterval)
	defer ticker.Stop()
	for {
		members, err := cli.MemberList(ctx)
		if err == nil {
			if m, ok := find(members, o.PeerURL); ok {
				if m.Name != "" {
					return dataLost(m.ID, o.DataDir, fmt.Sprintf("etcd lists it by its name %s", m.Name))
				}
				log.WithFields(logrus.Fields{
					"id":      fmt.Sprintf("%x", m.ID),
					"learner": m.IsLearner,
					"waited":  time.Since(start).Round(time.Millisecond),
				}).Info("member added: starting etcd")
				return nil
			}
		}
		p.observe(err, time.Now())
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be added: %w", o.PeerURL, ctx.Err())
		case <-ticker.C:
		}
	}
}

func find(members []etcdutil.Member, peerURL string) (etcdutil.Member, bool) {
	for _, m := range members {
		for _, u := range m.PeerURLs {
			if u == peerURL {
				return m, true
			}
		}
	}
	return etcdutil.Member{}, false
}

// stateNotListed is the state of a wait in which the member list answers without this member.
const stateNotListed = "not listed"

// progress logs what a waiting member sees when it changes, at most once per progressEvery,
// instead of once per poll.
type progress struct {
	log *logrus.Entry
	// state is the last state logged: stateNotListed or the text of an error.
	state  string
	logged time.Time
}

// observe takes the result of one poll, made at now.
func (p *progress) observe(err error, now time.Time) {
	state := stateNotListed
	if err != nil {
		state = err.Error()
	}
	if state == p.state || now.Sub(p.logged) < progressEvery {
		return
	}
	p.state, p.logged = state, now
	if err != nil {
		p.log.WithError(err).Warn("cannot list members yet; still trying")
		return
	}
	p.log.Info("members answer; this member is not listed yet")
}
