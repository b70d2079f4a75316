package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
	"github.com/etcd-operator/etcd-operator/pkg/member/peermove"
)

// Moving a running cluster's peers on or off TLS (docs/tls.md; package peermove says how the
// URLs go, plan_peer.go when one moves). Where the move stands is read from etcd's member
// list each pass; the pods are built listening where the URLs are and where they go
// (observation.peer.Listen). The claims record the hop before any pod is rolled or URL moved
// for it, so that pods made while no member answers (every pod deleted at once) listen where
// the members' URLs may be. Nothing else about the move is kept.

// observePeers finds where the members' peer URLs are and where they go: from etcd's member
// list, or, when no member answered, from the hop the claims record (none recorded: where
// the spec puts them, as before any move).
func (o *observation) observePeers() {
	final := member.SpecPeerEndpoint(o.cluster)
	if o.membersKnown {
		var urls []peermove.Endpoint
		for _, m := range o.members {
			for _, u := range m.PeerURLs {
				if e, ok := peermove.Of(u); ok {
					urls = append(urls, e)
				}
			}
		}
		o.peer = peermove.Next(urls, final)
		return
	}
	o.peer = peermove.Next(nil, final)
	if l, ok := recordedHop(o.claims); ok {
		o.peer = peermove.Step{Listen: l, Dest: final, Join: l[0]}
	}
}

// recordedHop is the hop the claims record (member.AnnotationPeerMove), the lowest ordinal's
// first: every claim records the hop before any URL moves on it, so claims that differ (a pass
// that stopped halfway through writing them) record hops that both listen on every endpoint a
// URL is at then.
func recordedHop(claims map[int]*corev1.PersistentVolumeClaim) (peermove.Listen, bool) {
	for _, ord := range slices.Sorted(maps.Keys(claims)) {
		if l, ok := peermove.ParseListen(claims[ord].Annotations[member.AnnotationPeerMove]); ok {
			return l, true
		}
	}
	return nil, false
}

// recordPeerMove writes on each member claim (one that holds a member's data) where the move
// of the peers stands, before the pass acts: the hop (Step.Listen) while one is under way;
// once every URL is where the spec puts them, the scheme the data now has
// (member.AnnotationPeerScheme), the scheme first, and no hop. Only from etcd's member list.
func (r *Reconciler) recordPeerMove(ctx context.Context, c *api.EtcdCluster, o *observation) error {
	if !o.membersKnown || o.peer.Problem != "" {
		return nil
	}
	final := member.SpecPeerEndpoint(c)
	moving := !o.peer.Listen.Equal(peermove.Listen{final})
	for _, ord := range slices.Sorted(maps.Keys(o.claims)) {
		pvc := o.claims[ord]
		if pvc.Annotations[member.AnnotationMemberID] == "" {
			continue
		}
		writes := map[string]string{member.AnnotationPeerMove: ""}
		if moving {
			writes[member.AnnotationPeerMove] = o.peer.Listen.String()
		} else if member.ClaimPeerScheme(pvc) != final.Scheme() {
			writes[member.AnnotationPeerScheme] = final.Scheme()
		}
		for _, key := range []string{member.AnnotationPeerScheme, member.AnnotationPeerMove} {
			value, ok := writes[key]
			if !ok || pvc.Annotations[key] == value {
				continue
			}
			updated, err := r.control.SetClaimAnnotation(ctx, pvc, key, value)
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("recording the peers' move on claim %s: %w", pvc.Name, err)
			}
			if updated != nil {
				pvc = updated
				o.claims[ord] = updated
			}
		}
	}
	return nil
}

// peerRecorded reports whether every member claim records the hop the pods listen on now.
func (o *observation) peerRecorded() bool {
	for _, pvc := range o.claims {
		if pvc.Annotations[member.AnnotationMemberID] != "" && pvc.Annotations[member.AnnotationPeerMove] != o.peer.Listen.String() {
			return false
		}
	}
	return true
}

// unforwarded are the ordinals of the members reached through their own Service whose
// Service, as cached, does not forward the move port. Members on the headless name are dialled
// at their pod's address, where any port is reached.
func (r *Reconciler) unforwarded(c *api.EtcdCluster, o *observation) ([]int, error) {
	var out []int
	for _, m := range o.members {
		ord, ok := o.memberOrdinal(m)
		if !ok || peermove.Host(m.PeerURLs[0]) != member.Host(c.Name, c.Namespace, ord) {
			continue
		}
		svc, err := r.deps.Services.Services(c.Namespace).Get(member.MemberServiceName(c.Name, ord))
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, ord)
		case err != nil:
			return nil, fmt.Errorf("getting the Service of member %s: %w", member.Name(c.Name, ord), err)
		case !member.Forwards(svc, member.MovePort):
			out = append(out, ord)
		}
	}
	slices.Sort(out)
	return out, nil
}

// peerURLsFor are the peer URLs, by ordinal, that a pod made now names for the given members
// (its initial cluster): outside a move, those on the headless name (headlessPeerURLs);
// during one, every member's as etcd lists it, and a member not listed yet (the one the pod
// is made for, joining) where members join now (Step.Join), so that etcd's check of a joining
// member's initial cluster against the member list passes.
func (o *observation) peerURLsFor(ordinals []int) map[int]string {
	c := o.cluster
	if !o.membersKnown || o.peer.Listen.Equal(peermove.Listen{member.SpecPeerEndpoint(c)}) {
		return o.headlessPeerURLs(ordinals)
	}
	out := map[int]string{}
	for _, ord := range ordinals {
		out[ord] = o.peer.Join.URL(member.Host(c.Name, c.Namespace, ord))
	}
	for _, m := range o.members {
		if ord, ok := o.memberOrdinal(m); ok && slices.Contains(ordinals, ord) {
			out[ord] = m.PeerURLs[0]
		}
	}
	return out
}

// movePeerURL sets a member's peer URL where the planner moves it (rule 8b), the claims having
// recorded the hop first (recordPeerMove, earlier in the pass).
func (r *Reconciler) movePeerURL(ctx context.Context, c *api.EtcdCluster, o *observation, ordinal int, id uint64, peerURL, why string) (Result, error) {
	if !o.peerRecorded() {
		return Result{RetryIn: afterAction}, nil
	}
	return r.control.MovePeerURL(ctx, c, o.voterEndpoints(0), ordinal, id, peerURL, why)
}

// joiningPeerURL is where member ordinal is added as a learner: where its pod says it is (the
// pod is made first, with the URL where members joined then: peerURLsFor), else where
// members join now.
func (o *observation) joiningPeerURL(ordinal int) string {
	if p := o.pods[ordinal]; p != nil {
		if u, ok := member.AdvertisedPeerURL(o.cluster, p); ok {
			return u
		}
	}
	return o.peer.Join.URL(member.Host(o.cluster.Name, o.cluster.Namespace, ordinal))
}

// holdPeerMove holds a move onto peer TLS that has not started (every URL still plaintext on
// the peer port, no pod listening over TLS) while the peer certificates cannot be used (a
// Secret spec.tls.peer names that fails its checks): pods are built listening as the members
// do, so no member is rolled onto certificates that are not there, and a member lost
// meanwhile comes back. Degraded says why (the pass's TLS problem).
func (o *observation) holdPeerMove(c *api.EtcdCluster, peer *portSource) {
	plain := peermove.Final(false)
	if !member.PeerTLS(c) || peer == nil || !peer.frozen || !o.membersKnown || !o.peer.Listen.Has(plain) || o.peer.Listen.Has(peermove.Final(true)) {
		return
	}
	for _, m := range o.members {
		if e, ok := peermove.Of(m.PeerURLs[0]); !ok || e != plain {
			return
		}
	}
	for _, p := range o.pods {
		if _, tls := peerTLSPort(c, p); tls {
			return
		}
	}
	o.peer = peermove.Step{Listen: peermove.Listen{plain}, Dest: plain, Join: plain}
}
