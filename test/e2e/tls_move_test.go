//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// clientListeners are the --listen-client-urls of the cluster's member pods, by pod name.
func clientListeners(f *framework.Framework, cluster string) map[string]string {
	return etcdFlagByPod(f, cluster, "--listen-client-urls")
}

// etcdFlagByPod is the value of flag (--name=value) on the etcd container of each of the
// cluster's member pods, by pod name.
func etcdFlagByPod(f *framework.Framework, cluster, flag string) map[string]string {
	out := map[string]string{}
	for pod, raw := range fieldByName(f, "pods", cluster, `.spec.containers[?(@.name=="etcd")].args`) {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			f.T().Fatalf("pod %s's args %q: %v", pod, raw, err)
		}
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				out[pod] = v
			}
		}
	}
	return out
}

// dualListener is --listen-client-urls of a member pod that serves plaintext and TLS.
const dualListener = "http://0.0.0.0:2379,https://0.0.0.0:2379"

// waitListening waits until every one of the cluster's n member pods listens on the client
// port as want (etcd's --listen-client-urls) and the cluster is in spec, and returns the
// pods seen meanwhile serving both plaintext and TLS.
func waitListening(f *framework.Framework, cluster string, n int, want string) map[string]bool {
	f.T().Helper()
	dual := map[string]bool{}
	f.Eventually(fmt.Sprintf("every member of %s listening on %s", cluster, want), 5*time.Minute, func() (bool, error) {
		got := clientListeners(f, cluster)
		for pod, v := range got {
			if v == dualListener {
				dual[pod] = true
			}
		}
		if len(got) != n {
			return false, fmt.Errorf("listeners %v", got)
		}
		for pod, v := range got {
			if v != want {
				return false, fmt.Errorf("pod %s listens on %s", pod, v)
			}
		}
		return f.ClusterInSpec(cluster, n)
	})
	return dual
}

// checkMoved waits until the 3 members of cluster listen on want, and checks that all but the
// last one rolled were seen serving both on the way (direction: onto, off), and that they are
// the members of ids, each restarted on its data.
func checkMoved(f *framework.Framework, cluster, direction, want string, ids map[string]string) {
	f.T().Helper()
	if dual := waitListening(f, cluster, 3, want); len(dual) < 2 {
		f.T().Errorf("members seen serving both plaintext and TLS on the way %s TLS: %v, want all but the last rolled", direction, dual)
	}
	if got := memberIDs(f, cluster); fmt.Sprint(got) != fmt.Sprint(ids) {
		f.T().Errorf("member IDs %v after the move %s TLS, want %v: each member restarts on its data", got, direction, ids)
	}
}

// TestClientTLSMovedInPlace: a running cluster with a plaintext client port (peers on TLS, the
// default) is moved onto client TLS and back by editing spec.tls.client, under a writer each
// way. Every member is rolled twice per move, through a step where its port serves both (seen
// on the pods; the last one of that step comes back in the spec's mode directly), and
// restarted on its own data: the same member IDs throughout, no
// acknowledged write lost, and at the end of each move the port serves only what the spec
// says.
func TestClientTLSMovedInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "moving"
	f.Apply(clusterManifest(name, "  size: 3\n"))
	f.WaitClusterInSpec(name, 3, 4*time.Minute)
	ids := memberIDs(f, name)
	plainURL := "--endpoints=http://" + f.ClientServiceHost(name) + ":2379"

	plain := f.StartWriter(name)
	plain.WaitAcked(5, time.Minute)
	f.Patch("etcdcluster/"+name, `{"spec":{"tls":{"client":{}}}}`)
	checkMoved(f, name, "onto", "https://0.0.0.0:2379", ids)
	onLog := plain.Stop()
	plain.Verify(onLog, name+"-0")
	if out, err := f.Exec(f.ClientPod(name), framework.EtcdctlContainer, "etcdctl", plainURL, "--dial-timeout=3s", "--command-timeout=3s", "get", "x"); err == nil {
		t.Errorf("the client port answered plaintext after the move onto TLS: %q", out)
	}
	c, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Status.TLS; st == nil || st.ClientSecretName != framework.ClientSecretName(name) {
		t.Errorf("status.tls %+v, want clientSecretName %s", st, framework.ClientSecretName(name))
	}

	secure := f.StartWriter(name)
	secure.WaitAcked(5, time.Minute)
	f.MustNS("patch", "etcdcluster/"+name, "--type=json", "-p", `[{"op":"remove","path":"/spec/tls/client"}]`)
	checkMoved(f, name, "off", "http://0.0.0.0:2379", ids)
	offLog := secure.Stop()
	secure.Verify(offLog, name+"-0")
	plain.Verify(onLog, name+"-0")
	if out, err := f.Exec(f.ClientPod(name), framework.EtcdctlContainer, "etcdctl", plainURL, "--dial-timeout=3s", "--command-timeout=3s", "put", "after", "off"); err != nil {
		t.Errorf("the client port refuses plaintext after the move off TLS: %q %v", out, err)
	}
}
