package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"
)

// fillWorkers is how many puts the fill pod keeps in flight: enough for etcd to batch
// proposals and fsyncs, few enough that the etcdctl processes (one per put) leave the
// members of a 2-core node their CPU.
const fillWorkers = 4

// fillScript puts N values of SIZE bytes each, under $PREFIX<5-digit index>, with $WORKERS
// loops side by side (worker w takes the indexes w, w+WORKERS, ...). Each value is FillValue's: its
// key and a newline, repeated and cut to SIZE bytes (yes | head), so the test can tell what
// each key must hold without carrying a copy. A put that fails is tried again, twice: an
// unacknowledged put that did land is overwritten with the same value. The pod exits 0 once
// every put was acknowledged.
const fillScript = `
worker() {
  i=$1
  while [ $i -lt $N ]; do
    k=$(printf '%s%05d' "$PREFIX" $i)
    try=0
    until yes "$k" | head -c $SIZE | etcdctl $FLAGS --dial-timeout=5s --command-timeout=30s put "$k" >/dev/null; do
      try=$((try+1))
      if [ $try -ge 3 ]; then echo "put $k failed 3 times"; exit 1; fi
    done
    i=$((i+WORKERS))
  done
}
pids=
w=0
while [ $w -lt $WORKERS ]; do
  worker $w &
  pids="$pids $!"
  w=$((w+1))
done
rc=0
for p in $pids; do wait $p || rc=1; done
[ $rc -eq 0 ] && echo "put $N values of $SIZE bytes"
exit $rc
`

// FillKey is the key of the i-th value Fill puts under prefix.
func FillKey(prefix string, i int) string { return fmt.Sprintf("%s%05d", prefix, i) }

// FillValue is the value Fill puts at FillKey(prefix, i): the key and a newline, repeated, cut
// to size bytes.
func FillValue(prefix string, i, size int) []byte {
	line := FillKey(prefix, i) + "\n"
	return bytes.Repeat([]byte(line), size/len(line)+1)[:size]
}

// Fill puts n values of size bytes each (FillKey, FillValue) into cluster through its client
// Service, from a pod inside the cluster as an application would (etcdctl, with the client
// certificate the operator keeps when the client port uses TLS), and waits until every put
// was acknowledged. It fails the test if one put is refused three times (a NOSPACE alarm: a
// backend quota too small for n*size) or if the pod does not finish within timeout.
func (f *Framework) Fill(cluster, prefix string, n, size int, timeout time.Duration) {
	f.t.Helper()
	c, err := f.GetEtcdCluster(cluster)
	if err != nil {
		f.t.Fatal(err)
	}
	ip := strings.TrimSpace(f.MustNS("get", "service", cluster+"-client", "-o", "jsonpath={.spec.clusterIP}"))
	if ip == "" {
		f.t.Fatalf("service %s-client has no cluster IP", cluster)
	}
	pod := "fill-" + cluster
	spec := etcdctlPodSpec{name: pod, app: "e2e-fill", command: []string{"/tools/sh", "-c", fillScript}}
	flags := "--endpoints=http://" + net.JoinHostPort(ip, "2379")
	if c.ClientTLS() {
		secret := ClientSecretName(cluster)
		host := f.ClientServiceHost(cluster)
		flags = fmt.Sprintf("--endpoints=https://%s --cacert=%s --cert=%s --key=%s", net.JoinHostPort(host, "2379"),
			SecretFile(secret, SecretCA), SecretFile(secret, SecretCert), SecretFile(secret, SecretKey))
		spec.secrets, spec.hostIP, spec.hostName = []string{secret}, ip, host
	}
	spec.env = [][2]string{{"N", fmt.Sprint(n)}, {"SIZE", fmt.Sprint(size)}, {"PREFIX", prefix}, {"FLAGS", flags}, {"WORKERS", fmt.Sprint(fillWorkers)}}
	f.Apply(spec.manifest())
	f.Eventually(fmt.Sprintf("%s: %d values of %d bytes put into %s", pod, n, size, cluster), timeout, func() (bool, error) {
		var p struct {
			Status struct {
				Phase string `json:"phase"`
			} `json:"status"`
		}
		if err := f.GetJSON("pod/"+pod, &p); err != nil {
			return false, err
		}
		if p.Status.Phase == "Failed" {
			out, _ := f.podLog(pod)
			f.t.Fatalf("%s failed: %s", pod, strings.TrimSpace(out))
		}
		return p.Status.Phase == "Succeeded", fmt.Errorf("pod %s", p.Status.Phase)
	})
}

// CheckFilled checks what Fill put into cluster, read through its client Service (from
// memberPod, as ClientEtcdctl does): exactly n keys under prefix, and the values at the
// indexes of sample, byte for byte.
func (f *Framework) CheckFilled(cluster, memberPod, prefix string, n, size int, sample []int) {
	f.t.Helper()
	out, err := f.ClientEtcdctl(cluster, memberPod, "get", prefix, "--prefix", "--keys-only", "-w", "json")
	if err != nil {
		f.t.Fatalf("counting %s in %s: %v", prefix, cluster, err)
	}
	var resp struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		f.t.Fatalf("counting %s in %s: %v in %q", prefix, cluster, err, out)
	}
	if resp.Count != n {
		f.t.Fatalf("%s holds %d keys under %s, want %d", cluster, resp.Count, prefix, n)
	}
	for _, i := range sample {
		key := FillKey(prefix, i)
		out, err := f.ClientEtcdctl(cluster, memberPod, "get", key, "-w", "json")
		if err != nil {
			f.t.Fatalf("get %s from %s: %v", key, cluster, err)
		}
		kvs, err := decodeKVs(out)
		if err != nil {
			f.t.Fatalf("get %s from %s: %v", key, cluster, err)
		}
		if got, ok := kvs[key]; !ok || !bytes.Equal([]byte(got), FillValue(prefix, i, size)) {
			f.t.Fatalf("%s: %s holds %d bytes (present %v) that are not the %d put", cluster, key, len(got), ok, size)
		}
	}
}

// HashKV is etcd's hash of the keyspace at revision rev (every key's every version up to rev,
// past the last compaction), as memberPod's own member computes it (etcdctl endpoint
// hashkv): two members, or two clusters, with the same hash at a revision hold the same data
// there. It also returns the compaction revision the hash starts after.
func (f *Framework) HashKV(memberPod string, rev int64) (hash uint32, compacted int64, err error) {
	// A minute rather than Etcdctl's 5 s (the later flag wins): the member reads every value
	// of the keyspace, hundreds of MiB in the large tests.
	out, err := f.Etcdctl(memberPod, "endpoint", "hashkv", fmt.Sprintf("--rev=%d", rev), "--command-timeout=1m", "-w", "json")
	if err != nil {
		return 0, 0, err
	}
	var resp []struct {
		HashKV struct {
			Hash            uint32 `json:"hash"`
			CompactRevision int64  `json:"compact_revision"`
		} `json:"HashKV"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp) != 1 {
		return 0, 0, fmt.Errorf("decoding endpoint hashkv of %s: %v in %q", memberPod, err, out)
	}
	return resp[0].HashKV.Hash, resp[0].HashKV.CompactRevision, nil
}
