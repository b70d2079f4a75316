//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// benchClaimsScale measures a scale 3 -> 5 on claims (each new member waits for its own claim,
// as the seed does at apply), and the same with the operator's pod deleted once the scale-up
// is under way: the next operator takes over the step the first left, with nothing to wait
// out but its start and what etcd requires. claimFloor (one pod with a claim -> Ready, from
// the floor part, 0 when it did not run) is printed beside it, and so is what etcd itself
// took in the new members (etcdJoin): after a restart of every member, as here, and in any
// cluster that has taken a snapshot of its log, a member that joins is sent a snapshot, and
// etcd then loses the joining member's first publish of its name (etcd-io/etcd#3774): it
// serves clients only once its retry, a request timeout later (7 s), succeeds. The cluster
// is left at three.
func benchClaimsScale(t *testing.T, f *framework.Framework, name string, claimFloor float64) {
	t.Helper()
	for _, killOperator := range []bool{false, true} {
		waitSettled(t, f, name)
		start := time.Now()
		f.Patch("etcdcluster/"+name, `{"spec":{"size":5}}`)
		desc := "operator: scale 3 -> 5 -> Available (claims)"
		if killOperator {
			desc = "operator: scale 3 -> 5, operator pod deleted once a new member's pod exists -> Available (claims)"
			waitFast(t, "scale-up under way", time.Minute, func() (bool, error) {
				out, err := f.NS("get", "pods", "-l", "etcd.operator.dev/cluster="+name, "-o", "name")
				return strings.Count(out, "pod/") > 3, err
			})
			f.MustKubectl("-n", framework.OperatorNamespace, "delete", "pod", "-l", "app.kubernetes.io/name=etcd-operator", "--wait=false")
		}
		watchCluster(t, f, name, func(c *framework.EtcdCluster) (bool, error) { return c.InSpec(5) })
		d := time.Since(start).Seconds()
		figure(t, desc, d, "s")
		join, lost := 0.0, 0
		for _, pod := range []string{name + "-3", name + "-4"} {
			j, err := etcdJoin(f, pod)
			if err != nil {
				t.Errorf("%s: %v", pod, err)
				continue
			}
			join, lost = max(join, j.serving.Seconds()), lost+j.lostPublishes
		}
		figure(t, desc+", the new members' etcd from its start to serving clients (longest)", join, "s")
		figure(t, desc+", first publishes etcd lost to the snapshot it sent (etcd-io/etcd#3774)", float64(lost), "publishes")
		if claimFloor > 0 {
			figure(t, desc+", over one claim's floor", d-claimFloor, "s")
			figure(t, desc+", over one claim's floor and etcd's own join", d-claimFloor-join, "s")
			if !killOperator {
				target(fmt.Sprintf("scale 3 -> 5 on claims at most one claim's floor + 4 s: %.1f s over it (%.1f s of it etcd's join)", d-claimFloor, join),
					d-claimFloor <= 4)
			}
		}
		waitSettled(t, f, name)
		f.Patch("etcdcluster/"+name, `{"spec":{"size":3}}`)
		watchCluster(t, f, name, func(c *framework.EtcdCluster) (bool, error) { return c.InSpec(3) })
	}
}

// joined is what a joining member's etcd log says of its start.
type joined struct {
	// serving is the time from etcd's start to its serving clients.
	serving time.Duration
	// lostPublishes counts the publishes of its name that timed out.
	lostPublishes int
}

// etcdJoin reads a member's etcd log (etcd logs JSON, one object a line; member-init's
// lines before it are text) for when its etcd started and when it served clients.
func etcdJoin(f *framework.Framework, pod string) (joined, error) {
	out, err := f.NS("logs", pod, "-c", "etcd")
	if err != nil {
		return joined{}, err
	}
	var j joined
	var started, serving time.Time
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			TS  time.Time `json:"ts"`
			Msg string    `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch {
		case line.Msg == "starting an etcd server" && started.IsZero():
			started = line.TS
		case line.Msg == "ready to serve client requests" && serving.IsZero():
			serving = line.TS
		case line.Msg == "failed to publish local member to cluster through raft":
			j.lostPublishes++
		}
	}
	if started.IsZero() || serving.IsZero() {
		return joined{}, fmt.Errorf("etcd's log has no start (%v) or no serving (%v)", started, serving)
	}
	j.serving = serving.Sub(started)
	return j, sc.Err()
}
