//go:build e2e

package e2e

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestPeerMoveAfterEveryPodLostWhileTheOperatorIsDown: spec.tls.peer is added to a running
// plaintext cluster while the operator is down, and every member pod is deleted before it
// comes back, so no pass ever saw the move start (no claim records a hop). The operator makes
// the pods again on their data's plaintext peers, the members answer with their IDs, and the
// peers are then moved onto TLS; no acknowledged write is lost. Not parallel: it stops the
// operator.
func TestPeerMoveAfterEveryPodLostWhileTheOperatorIsDown(t *testing.T) {
	f := framework.New(t)
	const name = "peerdown"
	ids, w := startPeerMove(t, f, name)

	start := stopOperator(f)
	f.Patch("etcdcluster/"+name, `{"spec":{"tls":{"peer":{}}}}`)
	f.MustNS("delete", "pod", "-l", "etcd.operator.dev/cluster="+name, "--wait=true", "--timeout=2m")
	start()
	checkPeersMoved(f, name, "onto", "https://0.0.0.0:2380", ids)
	log := w.Stop()
	w.Verify(log, name+"-0")
	t.Logf("%d puts acknowledged, %d failed", len(log.Acked), log.Failed)
}
