package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
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
// list, or, when no member answered, from the hop the claims record; none recorded, where the
// members' data was made (unmovedPeers), else where the spec puts them.
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
	} else if e, ok := unmovedPeers(o.claims, final); ok {
		o.peer = peermove.Step{Listen: peermove.Listen{e}, Dest: e, Join: e}
	}
}

// unmovedPeers is where the members' peer URLs are when spec.tls.peer was added to a plaintext
// cluster, or removed from a TLS one, and no pass has recorded a hop since (every pod lost
// before a member answered): each member claim records data made with the other scheme. Its
// pods are made as they were, and the move starts once their members answer.
func unmovedPeers(claims map[int]*corev1.PersistentVolumeClaim, final peermove.Endpoint) (peermove.Endpoint, bool) {
	other, found := peermove.Final(!final.TLS), false
	for _, pvc := range claims {
		if pvc.Annotations[member.AnnotationMemberID] == "" {
			continue
		}
		if member.ClaimPeerScheme(pvc) != other.Scheme() {
			return other, false
		}
		found = true
	}
	return other, found
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

// unforwarded are the ordinals of the members their peers may not reach on the move port: those
// reached through their own Service whose Service, as cached, does not forward it (members on
// the headless name are dialled at their pod's address, where any port is reached), and every
// member while spec.networkPolicy asks for a policy that the cluster's, as cached, is not yet
// (missing, someone else's, or without the move port: its update refused or not seen yet).
func (r *Reconciler) unforwarded(c *api.EtcdCluster, o *observation) ([]int, error) {
	var out []int
	if want := member.NetworkPolicy(c, r.deps.OperatorPeer); want != nil {
		have, err := r.deps.NetworkPolicies.NetworkPolicies(c.Namespace).Get(want.Name)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting the network policy %s: %w", want.Name, err)
		}
		if err != nil || !metav1.IsControlledBy(have, c) || !networkPolicyCurrent(have, want) {
			for _, m := range o.members {
				if ord, ok := o.memberOrdinal(m); ok {
					out = append(out, ord)
				}
			}
			slices.Sort(out)
			return out, nil
		}
	}
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
		for _, u := range m.PeerURLs {
			if e, ok := peermove.Of(u); !ok || e != plain {
				return
			}
		}
	}
	for _, p := range o.pods {
		if _, tls := peerTLSPort(c, p); tls {
			return
		}
	}
	o.peer = peermove.Step{Listen: peermove.Listen{plain}, Dest: plain, Join: plain}
}

// peerTLSRunning reports whether a member pod runs whose etcd takes TLS from its peers (and
// so trusts the peer CA it started with); with peer TLS, a pod the operator cannot read is
// taken to.
func peerTLSRunning(c *api.EtcdCluster, pods map[int]*corev1.Pod) bool {
	for _, p := range pods {
		_, isMember := member.ReadTemplate(c.Name, p)
		if _, ok := peerTLSPort(c, p); ok || (!isMember && member.PeerTLS(c)) {
			return true
		}
	}
	return false
}

// checkPeerSchemes holds back the members whose claims hold data made with the other peer
// scheme (member.AnnotationPeerScheme): etcd keeps the peer URLs in its data and does not take
// new ones from its flags, so a member started on it with the other scheme would listen where
// its peers never dial. It happens when a cluster deleted with whenDeleted Retain is created
// again with another spec.tls (or without one, which now means peer TLS). The cluster says
// which claims and what to set. Not held: a claim that records a move of the peers under way
// (the move is this cluster's own, and its pods listen where the claim says), unless the move
// would listen over TLS while the spec asks for none and no member Secret holds the peer
// certificates (observation.peerCertsHeld); and claims of the other scheme when the pods are
// made listening where their data's URLs are (every member claim of that scheme, or the
// members answering from there): the peers are moved once the members answer. A cluster
// created again over retained plaintext claims is moved onto TLS so too.
func checkPeerSchemes(c *api.EtcdCluster, o *observation) {
	want := member.PeerScheme(c)
	var mismatched []string
	var have string
	for _, ord := range slices.Sorted(maps.Keys(o.claims)) {
		pvc := o.claims[ord]
		if pvc.Annotations[member.AnnotationMemberID] == "" {
			continue
		}
		scheme := member.ClaimPeerScheme(pvc)
		hop, moving := peermove.ParseListen(pvc.Annotations[member.AnnotationPeerMove])
		switch {
		case want == "http" && !o.peerCertsHeld && (moving && hop.TLS() || !moving && scheme == "https"):
			// Its pod would listen over TLS under a spec without peer TLS, with certificates
			// nothing keeps (a cluster created again over the claims of one deleted mid-move,
			// its Secrets gone with the old object).
			scheme = "https"
		case moving, scheme == want:
			// Its cluster's peers move: its member's pod is made listening where the hop the
			// claim records says (observePeers).
			continue
		case o.peer.Listen.Has(peermove.Final(scheme == "https")):
			// Data of the other scheme, its pod made listening there (observePeers: every
			// member claim is of that scheme): moved once the members answer.
			continue
		}
		if _, running := o.pods[ord]; running {
			continue
		}
		mismatched, have = append(mismatched, pvc.Name), scheme
		if !slices.Contains(o.tls.Unready, ord) {
			o.tls.Unready = append(o.tls.Unready, ord)
		}
	}
	if len(mismatched) == 0 || o.tls.Problem != nil {
		return
	}
	fix := "spec.tls: {} (plaintext peers)"
	if want == "http" {
		fix = "spec.tls.peer"
	}
	o.tls.Problem = &plan.TLSProblem{Reason: api.ReasonInvalidSpec, Message: fmt.Sprintf(
		"claims %s hold members made with %s peer URLs, and spec.tls asks for %s; their members are not started on them: "+
			"delete the cluster (its claims are retained) and create it again with %s, or delete the claims if their data is not needed",
		strings.Join(mismatched, ", "), have, want, fix)}
}
