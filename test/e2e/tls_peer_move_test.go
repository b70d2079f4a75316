//go:build e2e

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// peerListeners are the --listen-peer-urls of the cluster's member pods, by pod name.
func peerListeners(f *framework.Framework, cluster string) map[string]string {
	return etcdFlagByPod(f, cluster, "--listen-peer-urls")
}

// peerURLs are the members' peer URLs as etcd lists them, asked through member pod.
func peerURLs(f *framework.Framework, pod string) (map[string]string, error) {
	members, err := f.MemberList(pod)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range members {
		out[m.Name] = strings.Join(m.PeerURLs, ",")
	}
	return out, nil
}

// movePort is the second peer port the members go through while their peers move.
const movePort = ":2382"

// peerMove is what a test saw of a move of the peers while it waited for its end.
type peerMove struct {
	// throughMovePort are the members whose URL was seen on the move port, and the pods seen
	// listening on it.
	throughMovePort map[string]bool
	listenedThere   map[string]bool
}

// waitPeersAt waits until every one of the cluster's n member pods listens for peers on want
// alone (etcd's --listen-peer-urls), every member's peer URL is on the same scheme and port
// (on its own host), and the cluster is in spec; and says what it saw on the way.
func waitPeersAt(f *framework.Framework, cluster string, n int, want string) peerMove {
	f.T().Helper()
	seen := peerMove{throughMovePort: map[string]bool{}, listenedThere: map[string]bool{}}
	scheme, port, _ := strings.Cut(strings.TrimPrefix(want, "--"), "://0.0.0.0")
	f.Eventually(fmt.Sprintf("every member of %s on %s", cluster, want), 8*time.Minute, func() (bool, error) {
		listeners := peerListeners(f, cluster)
		for pod, v := range listeners {
			if strings.Contains(v, movePort) {
				seen.listenedThere[pod] = true
			}
		}
		urls, err := peerURLs(f, cluster+"-0")
		if err != nil {
			return false, err
		}
		for m, u := range urls {
			if strings.Contains(u, movePort) {
				seen.throughMovePort[m] = true
			}
		}
		if len(listeners) != n || len(urls) != n {
			return false, fmt.Errorf("listeners %v, URLs %v", listeners, urls)
		}
		for pod, v := range listeners {
			if v != want {
				return false, fmt.Errorf("pod %s listens on %s", pod, v)
			}
		}
		for m, u := range urls {
			if !strings.HasPrefix(u, scheme+"://") || !strings.HasSuffix(u, port) {
				return false, fmt.Errorf("member %s is at %s", m, u)
			}
		}
		return f.ClusterInSpec(cluster, n)
	})
	return seen
}

// checkPeersMoved waits for the move's end (waitPeersAt) and checks that every member went
// through the move port, and that they are the members of ids, each restarted on its data.
func checkPeersMoved(f *framework.Framework, cluster, direction, want string, ids map[string]string) {
	f.T().Helper()
	checkPeersMovedSeen(f, cluster, direction, want, ids, nil)
}

// checkPeersMovedSeen is checkPeersMoved for a move part of which the test watched itself:
// atMovePort are the members it saw at the move port before.
func checkPeersMovedSeen(f *framework.Framework, cluster, direction, want string, ids map[string]string, atMovePort map[string]bool) {
	f.T().Helper()
	seen := waitPeersAt(f, cluster, 3, want)
	maps.Copy(seen.throughMovePort, atMovePort)
	if len(seen.throughMovePort) < 2 || len(seen.listenedThere) < 2 {
		f.T().Errorf("the move %s TLS: members seen at the move port %v, pods seen listening there %v; want every member through it",
			direction, seen.throughMovePort, seen.listenedThere)
	}
	if got := memberIDs(f, cluster); fmt.Sprint(got) != fmt.Sprint(ids) {
		f.T().Errorf("member IDs %v after the move %s TLS, want %v: each member restarts on its data", got, direction, ids)
	}
}

// checkPeerPortTLSOnly checks that member 0's peer port takes a member's certificate over TLS
// and refuses plaintext, through a port-forward (the peer port speaks HTTP).
func checkPeerPortTLSOnly(t *testing.T, f *framework.Framework, cluster string) {
	t.Helper()
	data, err := f.SecretData(memberTLSSecret(cluster, 0))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data[keyPeerCA]) {
		t.Fatalf("secret %s has no %s", memberTLSSecret(cluster, 0), keyPeerCA)
	}
	pair, err := tls.X509KeyPair(data[keyPeerCert], data[keyPeerKey])
	if err != nil {
		t.Fatalf("secret %s: the peer key pair does not load", memberTLSSecret(cluster, 0))
	}
	peer := f.PortForward(cluster+"-0", 2380)
	withCert := &tls.Config{RootCAs: roots, ServerName: f.MemberHost(cluster, 0), Certificates: []tls.Certificate{pair}}
	accepted := func(when string) {
		t.Helper()
		f.Eventually("the peer port accepting a member's certificate "+when, 30*time.Second, func() (bool, error) {
			err := peerGet(peer, withCert)
			return err == nil, err
		})
	}
	accepted("before plaintext")
	if err := peerGet(peer, nil); err == nil {
		t.Error("the peer port answered plaintext HTTP after the move onto TLS")
	}
	accepted("after plaintext")
}

// startPeerMove makes a plaintext cluster of 3 (peers and clients), waits for it, starts a
// writer, and returns the member IDs.
func startPeerMove(t *testing.T, f *framework.Framework, name string) (map[string]string, *framework.Writer) {
	t.Helper()
	requireOperator(t, f)
	f.Apply(clusterManifest(name, "  size: 3\n  tls: {}\n"))
	f.WaitClusterInSpec(name, 3, 4*time.Minute)
	ids := memberIDs(f, name)
	w := f.StartWriter(name)
	w.WaitAcked(5, time.Minute)
	return ids, w
}

// TestPeerTLSMovedInPlace: a running plaintext cluster (spec.tls: {}) is moved onto peer and
// client TLS by adding both, under a writer, then its peers back off TLS by removing
// spec.tls.peer, under a writer with a client certificate. Each way, every member goes through
// the move port 2382 (its URL and its pod's listener), keeps its ID (restarted on its data),
// and no acknowledged write is lost; on TLS the peer port refuses plaintext and takes a
// member's certificate, and off it the port answers plaintext again. Dropping spec.tls whole
// is refused at apply with the schema's message: peer TLS is the default, so that is no
// request to move off it.
func TestPeerTLSMovedInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	const name = "peermove"
	ids, plain := startPeerMove(t, f, name)

	f.Patch("etcdcluster/"+name, `{"spec":{"tls":{"peer":{},"client":{}}}}`)
	checkPeersMoved(f, name, "onto", "https://0.0.0.0:2380", ids)
	waitListening(f, name, 3, "https://0.0.0.0:2379")
	onLog := plain.Stop()
	plain.Verify(onLog, name+"-0")
	checkPeerPortTLSOnly(t, f, name)
	t.Logf("onto TLS: %d puts acknowledged, %d failed", len(onLog.Acked), onLog.Failed)

	_, err := f.NS("patch", "etcdcluster/"+name, "--type=json", "-p", `[{"op":"remove","path":"/spec/tls"}]`)
	if err == nil || !strings.Contains(err.Error(), "spec.tls cannot be dropped while it sets peer") {
		t.Errorf("dropping spec.tls: %v; want it refused with the schema's message", err)
	}

	secure := f.StartWriter(name)
	secure.WaitAcked(5, time.Minute)
	f.MustNS("patch", "etcdcluster/"+name, "--type=json", "-p", `[{"op":"remove","path":"/spec/tls/peer"}]`)
	checkPeersMoved(f, name, "off", "http://0.0.0.0:2380", ids)
	offLog := secure.Stop()
	secure.Verify(offLog, name+"-0")
	plain.Verify(onLog, name+"-0")
	t.Logf("off TLS: %d puts acknowledged, %d failed", len(offLog.Acked), offLog.Failed)
	peer := f.PortForward(name+"-0", 2380)
	f.Eventually("the peer port answering plaintext after the move off TLS", 30*time.Second, func() (bool, error) {
		err := peerGet(peer, nil)
		return err == nil, err
	})
}

// TestPeerMoveEveryPodDeleted: every member pod is deleted at once at the end of the first hop
// onto peer TLS (every URL on https:2382, the claims made with plaintext peers), under a
// writer. No member answers then, so the pods are made again listening where the claims
// record the hop; the cluster comes back with the same members and finishes the move; no
// acknowledged write is lost.
func TestPeerMoveEveryPodDeleted(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	const name = "peerdeleted"
	ids, w := startPeerMove(t, f, name)

	f.Patch("etcdcluster/"+name, `{"spec":{"tls":{"peer":{}}}}`)
	// Every member is seen at the move port here: once the pods are deleted, member 0 may
	// answer again only after the move has ended.
	atMovePort := map[string]bool{}
	f.Eventually("every member's peer URL on https:2382", 6*time.Minute, func() (bool, error) {
		urls, err := peerURLs(f, name+"-0")
		if err != nil {
			return false, err
		}
		for m, u := range urls {
			if strings.HasPrefix(u, "https://") && strings.HasSuffix(u, movePort) {
				atMovePort[m] = true
			}
		}
		return len(atMovePort) == 3, fmt.Errorf("URLs %v", urls)
	})
	claims := f.MustNS("get", "pvc", "-l", "etcd.operator.dev/cluster="+name, "-o", `jsonpath={.items[*].metadata.annotations.etcd\.operator\.dev/peer-move}`)
	if hops := strings.Fields(claims); len(hops) != 3 || slices.ContainsFunc(hops, func(h string) bool { return !strings.Contains(h, "https:2382") }) {
		t.Errorf("claims record the hops %q, want each the first hop's", claims)
	}
	uids := podUIDs(f, name)
	f.MustNS("delete", "pod", "-l", "etcd.operator.dev/cluster="+name, "--wait=false")
	checkPeersMovedSeen(f, name, "onto", "https://0.0.0.0:2380", ids, atMovePort)
	for pod, uid := range podUIDs(f, name) {
		if uids[pod] == uid {
			t.Errorf("pod %s was not made again", pod)
		}
	}
	log := w.Stop()
	w.Verify(log, name+"-0")
	t.Logf("%d puts acknowledged, %d failed", len(log.Acked), log.Failed)
}
