package framework

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// WriterImage runs the acknowledged-write checker's writer: busybox's sh and wget, which
// every cluster the suite runs on has loaded (local-path-provisioner uses it too).
const WriterImage = "docker.io/library/busybox:1.35.0"

// writerPrefix is the prefix of the keys the writer puts: ack/<8-digit sequence number>.
const writerPrefix = "ack/"

// Writer is the acknowledged-write checker: a pod that writes to a cluster through its
// client Service, as an application does, and records every put etcd acknowledged; Verify
// reads them all back, linearizably, once the disturbance is over.
type Writer struct {
	f       *Framework
	cluster string
	// Pod is the writer pod's name.
	Pod string
	// container, stop and shell: the writer's container, the command that stops it, and its
	// shell.
	container string
	stop      []string
	shell     string
}

// WriteLog is what the writer did.
type WriteLog struct {
	// Acked are the sequence numbers of the puts etcd acknowledged, in order.
	Acked []int
	// AckedAt is when each of Acked was acknowledged, in seconds of the writer's clock.
	AckedAt []float64
	// Failed counts the puts that were not acknowledged (refused, timed out, no endpoint).
	Failed int
}

// LongestWait is the longest time the writer went without an acknowledged put, from the
// last put acknowledged before since (a log read earlier) to the last one in log. Unlike a
// count of failed puts, it does not depend on how fast a put fails: a refused connection
// fails at once and is retried many times, a vanished address holds a put for its timeout.
func (log WriteLog) LongestWait(since WriteLog) float64 {
	longest := 0.0
	for i := max(len(since.AckedAt), 1); i < len(log.AckedAt); i++ {
		longest = max(longest, log.AckedAt[i]-log.AckedAt[i-1])
	}
	return longest
}

// MostConsecutiveFailures is the longest run of puts that failed one after another: 1 when
// every failed put was followed by an acknowledged one, as with a single retry.
func (log WriteLog) MostConsecutiveFailures() int {
	most, next := 0, 0
	for _, i := range log.Acked {
		most, next = max(most, i-next), i+1
	}
	// The puts after the last acknowledged one failed too.
	if total := len(log.Acked) + log.Failed; total > next {
		most = max(most, total-next)
	}
	return most
}

// StartWriter starts writing to cluster and waits until the first put is acknowledged. The
// writer pod is kept off the nodes named in avoid (a node a test will stop or drain). A
// cluster whose client port uses TLS is written to with the client certificate the operator
// keeps for applications (ClientSecretName), over TLS verified by the client Service's name.
func (f *Framework) StartWriter(cluster string, avoid ...string) *Writer {
	f.t.Helper()
	w := &Writer{f: f, cluster: cluster, Pod: "writer-" + cluster, stop: []string{"touch", "/work/stop"}, shell: "sh"}
	if f.writers++; f.writers > 1 {
		// A writer started after an earlier one has stopped gets a pod of its own.
		w.Pod = fmt.Sprintf("writer-%s-%d", cluster, f.writers)
	}
	c, err := f.GetEtcdCluster(cluster)
	if err != nil {
		f.t.Fatal(err)
	}
	// The Service's address rather than its name: a lookup per put (several, with the pod's
	// search path) would load cluster DNS, which the members and the operator depend on.
	ip := strings.TrimSpace(f.MustNS("get", "service", cluster+"-client", "-o", "jsonpath={.spec.clusterIP}"))
	if ip == "" {
		f.t.Fatalf("service %s-client has no cluster IP", cluster)
	}
	if c.ClientTLS() {
		host := f.ClientServiceHost(cluster)
		w.container, w.stop, w.shell = EtcdctlContainer, []string{"/tools/touch", "/work/stop"}, "/tools/sh"
		f.Apply(etcdctlPodSpec{
			name: w.Pod, app: "e2e-writer", command: []string{"/tools/sh", "-c", tlsWriterScript()},
			env: [][2]string{
				{"ENDPOINT", "https://" + net.JoinHostPort(host, "2379")},
				{"SECRET_DIR", secretDir(ClientSecretName(cluster))},
			},
			secrets: []string{ClientSecretName(cluster)},
			hostIP:  ip, hostName: host, work: true, avoid: avoid,
		}.manifest())
	} else {
		f.Apply(plainWriterPod(w.Pod, ip, avoid))
	}
	f.Eventually("writer "+w.Pod+" has an acknowledged put", 2*time.Minute, func() (bool, error) {
		log, err := w.log()
		return err == nil && len(log.Acked) > 0, nil
	})
	return w
}

// plainWriterPod is the writer pod for a cluster whose client port is plaintext: writerScript
// in busybox's image, writing to the client Service's address ip.
func plainWriterPod(pod, ip string, avoid []string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app.kubernetes.io/name: e2e-writer}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1%s
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: writer
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    env:
    - {name: ENDPOINT, value: "http://%s"}
    volumeMounts: [{name: work, mountPath: /work}]
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
  volumes: [{name: work, emptyDir: {}}]
`, pod, avoidNodes(avoid), WriterImage, writerScript(), net.JoinHostPort(ip, "2379"))
}

// avoidNodes is a pod spec's affinity that keeps it off the named nodes ("" for none).
func avoidNodes(nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	return fmt.Sprintf(`
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: kubernetes.io/hostname, operator: NotIn, values: [%s]}`, strings.Join(nodes, ", "))
}

// Progress returns the writer's log so far.
func (w *Writer) Progress() (WriteLog, error) { return w.log() }

// WaitAcked waits until at least n more puts have been acknowledged than now: the cluster
// serves writes.
func (w *Writer) WaitAcked(n int, timeout time.Duration) {
	w.f.t.Helper()
	start, err := w.log()
	if err != nil {
		w.f.t.Fatalf("reading the writer's log: %v", err)
	}
	w.f.Eventually(fmt.Sprintf("%d more acknowledged puts to %s", n, w.cluster), timeout, func() (bool, error) {
		log, err := w.log()
		return err == nil && len(log.Acked) >= len(start.Acked)+n, nil
	})
}

// Stop stops the writer and returns what it did.
func (w *Writer) Stop() WriteLog {
	w.f.t.Helper()
	if _, err := w.f.Exec(w.Pod, w.container, w.stop...); err != nil {
		// The writer exits as soon as it sees the file, and its exit can cut the exec short
		// (exit status 137) after the touch took effect: its log says whether it stopped.
		w.f.t.Logf("stopping writer %s: %v; waiting for its DONE", w.Pod, err)
	}
	var log WriteLog
	w.f.Eventually("writer "+w.Pod+" done", time.Minute, func() (bool, error) {
		out, err := w.f.podLog(w.Pod)
		if err != nil {
			return false, nil
		}
		if !strings.Contains(out, "\nDONE") {
			return false, nil
		}
		log, err = parseWriteLog(out)
		return err == nil, err
	})
	return log
}

// StopAndVerify stops the writer and reads every acknowledged put back through the client
// Service, linearizably, from inside memberPod: each must be there with its value. It fails
// the test on a lost or changed write and returns the log.
func (w *Writer) StopAndVerify(memberPod string) WriteLog {
	w.f.t.Helper()
	log := w.Stop()
	w.Verify(log, memberPod)
	return log
}

// Verify reads every put acknowledged in log back through the client Service, linearizably,
// from inside memberPod, and fails the test on a lost or changed write. A test that stops the
// writer before taking the cluster away (and bringing it back) verifies afterwards.
func (w *Writer) Verify(log WriteLog, memberPod string) {
	w.f.t.Helper()
	w.VerifyIn(w.cluster, log, memberPod)
}

// VerifyIn is Verify against another cluster than the one the writer wrote to: one restored
// from a snapshot taken after the puts of log, read through its own client Service from its
// member pod memberPod.
func (w *Writer) VerifyIn(cluster string, log WriteLog, memberPod string) {
	w.f.t.Helper()
	if len(log.Acked) == 0 {
		w.f.t.Fatalf("writer %s: no put was acknowledged", w.Pod)
	}
	kvs := w.readBack(cluster, memberPod)
	var lost []string
	for _, i := range log.Acked {
		key, want := fmt.Sprintf("%s%08d", writerPrefix, i), writerValue(i)
		if got, ok := kvs[key]; !ok || got != want {
			lost = append(lost, fmt.Sprintf("%s (read %q, want %q)", key, got, want))
		}
	}
	w.f.t.Logf("writer %s: %d puts acknowledged, %d not; %d keys read back", w.Pod, len(log.Acked), log.Failed, len(kvs))
	if len(lost) > 0 {
		w.f.t.Fatalf("%d acknowledged writes lost or changed, first: %v", len(lost), lost[:min(len(lost), 10)])
	}
}

// readBack reads every key the writer may have put from cluster, through its client Service,
// linearizably, from inside memberPod (as ClientEtcdctl does).
func (w *Writer) readBack(cluster, memberPod string) map[string]string {
	w.f.t.Helper()
	var kvs map[string]string
	w.f.Eventually("reading back the acknowledged puts", 2*time.Minute, func() (bool, error) {
		out, err := w.f.ClientEtcdctl(cluster, memberPod, "get", writerPrefix, "--prefix", "--consistency=l", "-w", "json")
		if err != nil {
			w.f.t.Logf("reading back: %v", err)
			return false, nil
		}
		kvs, err = decodeKVs(out)
		return err == nil, err
	})
	return kvs
}

func (w *Writer) log() (WriteLog, error) {
	out, err := w.f.podLog(w.Pod)
	if err != nil {
		return WriteLog{}, err
	}
	return parseWriteLog(out)
}

// parseWriteLog reads the writer's ACK and FAIL lines.
func parseWriteLog(out string) (WriteLog, error) {
	var log WriteLog
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) != 3 || (fields[0] != "ACK" && fields[0] != "FAIL") {
			continue
		}
		i, err := strconv.Atoi(fields[1])
		if err != nil {
			return WriteLog{}, fmt.Errorf("writer log line %q: %w", line, err)
		}
		at, err := strconv.ParseFloat(fields[2], 64)
		if err != nil {
			return WriteLog{}, fmt.Errorf("writer log line %q: %w", line, err)
		}
		if fields[0] == "FAIL" {
			log.Failed++
			continue
		}
		log.Acked = append(log.Acked, i)
		log.AckedAt = append(log.AckedAt, at)
	}
	return log, nil
}

// decodeKVs decodes `etcdctl get -w json` (keys and values in base64).
func decodeKVs(out string) (map[string]string, error) {
	var resp struct {
		KVs []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		return nil, fmt.Errorf("decoding etcdctl get: %w", err)
	}
	kvs := map[string]string{}
	for _, kv := range resp.KVs {
		k, err := base64.StdEncoding.DecodeString(kv.Key)
		if err != nil {
			return nil, fmt.Errorf("decoding key %q: %w", kv.Key, err)
		}
		v, err := base64.StdEncoding.DecodeString(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("decoding value of %s: %w", k, err)
		}
		kvs[string(k)] = string(v)
	}
	return kvs, nil
}

// WaitApplied waits until memberPod's own etcd (a serializable read, which it answers from its
// own copy) has the last put acknowledged in log: puts are applied in order, so that member
// then holds every acknowledged write. A test that is about to take the other members' data
// away waits for it first.
func (w *Writer) WaitApplied(log WriteLog, memberPod string) {
	w.f.t.Helper()
	if len(log.Acked) == 0 {
		w.f.t.Fatalf("writer %s: no put was acknowledged", w.Pod)
	}
	last := log.Acked[len(log.Acked)-1]
	key, want := fmt.Sprintf("%s%08d", writerPrefix, last), writerValue(last)
	w.f.Eventually(memberPod+" has applied "+key, time.Minute, func() (bool, error) {
		out, err := w.f.Etcdctl(memberPod, "get", key, "--print-value-only", "--consistency=s")
		return err == nil && strings.TrimSpace(out) == want, fmt.Errorf("read %q, %v", out, err)
	})
}
