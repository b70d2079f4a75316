package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// EtcdCluster is the part of an EtcdCluster object the tests read.
type EtcdCluster struct {
	Metadata struct {
		Name       string `json:"name"`
		Namespace  string `json:"namespace"`
		Generation int64  `json:"generation"`
	} `json:"metadata"`
	Spec struct {
		Size int      `json:"size"`
		TLS  *TLSSpec `json:"tls"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64  `json:"observedGeneration"`
		Phase              string `json:"phase"`
		Size               int    `json:"size"`
		ReadyMembers       int    `json:"readyMembers"`
		CurrentVersion     string `json:"currentVersion"`
		Conditions         []struct {
			Type               string    `json:"type"`
			Status             string    `json:"status"`
			Reason             string    `json:"reason"`
			Message            string    `json:"message"`
			LastTransitionTime time.Time `json:"lastTransitionTime"`
		} `json:"conditions"`
		Members []struct {
			Name    string `json:"name"`
			ID      string `json:"id"`
			Ready   bool   `json:"ready"`
			Leader  bool   `json:"leader"`
			Learner bool   `json:"learner"`
			Claim   string `json:"claim"`
			// Version and PodCurrent: the version the member reports, and whether its pod
			// was built from the current spec.
			Version    string `json:"version"`
			PodCurrent bool   `json:"podCurrent"`
		} `json:"members"`
		TLS *TLSStatus `json:"tls"`
	} `json:"status"`
}

// TLSSpec is the part of spec.tls the tests read: which ports use TLS, and whose
// certificates (a Secret's name, or "" when the operator issues them).
type TLSSpec struct {
	Peer *struct {
		SecretName string `json:"secretName"`
	} `json:"peer"`
	Client *struct {
		SecretName string `json:"secretName"`
	} `json:"client"`
	LeafLifetime string `json:"leafLifetime"`
}

// TLSStatus is status.tls: the Secret with the applications' client certificate, when the
// CAs and the first of the members' leaves expire, and the step each port's CA rotation is
// at (empty when none is under way).
type TLSStatus struct {
	ClientSecretName string     `json:"clientSecretName"`
	PeerCAExpiry     *time.Time `json:"peerCAExpiry"`
	ClientCAExpiry   *time.Time `json:"clientCAExpiry"`
	LeafExpiry       *time.Time `json:"leafExpiry"`
	PeerCARotation   string     `json:"peerCARotation"`
	ClientCARotation string     `json:"clientCARotation"`
}

// ClientTLS reports whether the cluster's client port uses TLS (spec.tls.client is set).
func (c *EtcdCluster) ClientTLS() bool { return c.Spec.TLS != nil && c.Spec.TLS.Client != nil }

// PeerTLS reports whether the cluster's members talk to each other over TLS (spec.tls.peer).
func (c *EtcdCluster) PeerTLS() bool { return c.Spec.TLS != nil && c.Spec.TLS.Peer != nil }

// Condition returns the status ("True", "False", or "" when absent) of a condition.
func (c *EtcdCluster) Condition(t string) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Status
		}
	}
	return ""
}

// ConditionReason returns the reason and message of a condition ("" when absent).
func (c *EtcdCluster) ConditionReason(t string) (reason, message string) {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Reason, cond.Message
		}
	}
	return "", ""
}

// AvailableFor reports how long the cluster has been Available (0 when it is not).
func (c *EtcdCluster) AvailableFor(now time.Time) time.Duration {
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Available" && cond.Status == "True" {
			return now.Sub(cond.LastTransitionTime)
		}
	}
	return 0
}

// SettledFor reports how long the operator has had nothing left to change (Progressing False,
// reason Reconciled), 0 while it changes something. Available only says the cluster serves.
func (c *EtcdCluster) SettledFor(now time.Time) time.Duration {
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Progressing" && cond.Status == "False" && cond.Reason == "Reconciled" {
			return now.Sub(cond.LastTransitionTime)
		}
	}
	return 0
}

// MemberID returns the ID status reports for a member, or "".
func (c *EtcdCluster) MemberID(name string) string {
	for _, m := range c.Status.Members {
		if m.Name == name {
			return m.ID
		}
	}
	return ""
}

// GetEtcdCluster reads an EtcdCluster in the test namespace.
func (f *Framework) GetEtcdCluster(name string) (*EtcdCluster, error) {
	var c EtcdCluster
	if err := f.GetJSON("etcdcluster/"+name, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// MemberNames are the names of a cluster of size n: <name>-0 .. <name>-(n-1).
func MemberNames(name string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", name, i)
	}
	return out
}

// ClusterInSpec reports whether the operator reports the cluster Available at its current
// generation with exactly the members <name>-0..n-1, all ready voters.
func (f *Framework) ClusterInSpec(name string, n int) (bool, error) {
	c, err := f.GetEtcdCluster(name)
	if err != nil {
		return false, err
	}
	return c.InSpec(n)
}

// InSpec reports whether this version of the cluster is reported Available at its current
// generation with exactly the members <name>-0..n-1, all ready voters.
func (c *EtcdCluster) InSpec(n int) (bool, error) {
	name := c.Metadata.Name
	if c.Status.ObservedGeneration != c.Metadata.Generation {
		return false, fmt.Errorf("status at generation %d, object at %d", c.Status.ObservedGeneration, c.Metadata.Generation)
	}
	if c.Condition("Available") != "True" || c.Status.Size != n || c.Status.ReadyMembers != n {
		return false, fmt.Errorf("phase %s, Available=%s, size %d, ready %d, want %d",
			c.Status.Phase, c.Condition("Available"), c.Status.Size, c.Status.ReadyMembers, n)
	}
	var names []string
	for _, m := range c.Status.Members {
		if !m.Ready || m.Learner {
			return false, fmt.Errorf("member %s ready=%v learner=%v", m.Name, m.Ready, m.Learner)
		}
		names = append(names, m.Name)
	}
	sort.Strings(names)
	if want := MemberNames(name, n); strings.Join(names, ",") != strings.Join(want, ",") {
		return false, fmt.Errorf("members %v, want %v", names, want)
	}
	return true, nil
}

// WatchEtcdCluster follows the cluster with one `kubectl get --watch` until cond holds for a
// version of it, or timeout. Unlike polling, it starts no process per check, so a measurement
// taken with it does not load the machine it measures, and it sees every version the API
// server sends.
func (f *Framework) WatchEtcdCluster(name string, timeout time.Duration, cond func(*EtcdCluster) (bool, error)) error {
	return f.watchClusters(timeout, "etcdcluster "+name, cond, "-n", f.Namespace, "get", "etcdcluster/"+name)
}

// WatchEtcdClusters follows, with one watch, every EtcdCluster of every namespace that
// matches the label selector, until cond holds for a version of one of them, or timeout. cond
// sees each version of each cluster as the API server sends it; a caller waiting for all of
// them keeps what it has seen and returns true at the last.
func (f *Framework) WatchEtcdClusters(selector string, timeout time.Duration, cond func(*EtcdCluster) (bool, error)) error {
	return f.watchClusters(timeout, "etcdclusters "+selector, cond, "get", "etcdclusters", "--all-namespaces", "-l", selector)
}

func (f *Framework) watchClusters(timeout time.Duration, what string, cond func(*EtcdCluster) (bool, error), args ...string) error {
	return f.WatchJSON(timeout, what, func(raw json.RawMessage) (bool, error) {
		var c EtcdCluster
		if err := json.Unmarshal(raw, &c); err != nil {
			return false, err
		}
		return cond(&c)
	}, args...)
}

// watchSegment is how long one `kubectl --watch` runs before WatchJSON starts another, which
// begins with a fresh read of the objects: a watch that stops delivering (seen once on the
// loaded node: a status change the operator's Event shows written, not delivered for two
// minutes) holds a wait up by this much at most.
const watchSegment = 30 * time.Second

// WatchJSON runs `kubectl ARGS --watch -o json` and hands each object it prints to cond until
// cond returns true, or timeout; the error names what, and cond's last error. The watch is
// started anew every watchSegment.
func (f *Framework) WatchJSON(timeout time.Duration, what string, cond func(json.RawMessage) (bool, error), args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	last := errors.New("no version received")
	for {
		done, err := f.watchOnce(ctx, cond, &last, args)
		switch {
		case done:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("watching %s: not there after %s (last: %v)", what, timeout, last)
		case err != nil:
			return fmt.Errorf("watching %s (last: %v): %w", what, last, err)
		}
	}
}

// watchOnce runs one `kubectl --watch` of at most watchSegment, handing cond each object; it
// returns true once cond does, and an error when kubectl fails or prints what is not JSON.
func (f *Framework) watchOnce(ctx context.Context, cond func(json.RawMessage) (bool, error), last *error, args []string) (bool, error) {
	cmd := exec.CommandContext(ctx, f.kubectl, append(args, "--watch", "-o", "json", "--request-timeout="+watchSegment.String())...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	if err := cmd.Start(); err != nil {
		return false, err
	}
	dec := json.NewDecoder(out)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			_ = cmd.Process.Kill()
			waitErr := cmd.Wait()
			if errors.Is(err, io.EOF) && waitErr == nil {
				return false, nil
			}
			return false, fmt.Errorf("%w (kubectl: %v): %s", err, waitErr, strings.TrimSpace(stderr.String()))
		}
		ok, err := cond(raw)
		if ok {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return true, nil
		}
		*last = err
	}
}

// WaitClusterInSpec waits until ClusterInSpec holds and returns how long that took.
func (f *Framework) WaitClusterInSpec(name string, n int, timeout time.Duration) time.Duration {
	f.t.Helper()
	start := time.Now()
	f.Eventually(fmt.Sprintf("etcdcluster %s available with %d members", name, n), timeout, func() (bool, error) {
		return f.ClusterInSpec(name, n)
	})
	return time.Since(start)
}

// CheckAgreement checks that etcd's member list (asked through a member), the member pods
// and spec.size all agree on the members <name>-0..n-1.
func (f *Framework) CheckAgreement(name string, n int) {
	f.t.Helper()
	want := strings.Join(MemberNames(name, n), ",")
	c, err := f.GetEtcdCluster(name)
	if err != nil {
		f.t.Fatal(err)
	}
	if c.Spec.Size != n {
		f.t.Fatalf("spec.size = %d, want %d", c.Spec.Size, n)
	}
	members, err := f.MemberList(name + "-0")
	if err != nil {
		f.t.Fatal(err)
	}
	var names []string
	for _, m := range members {
		if !m.Started() || m.IsLearner {
			f.t.Fatalf("member %x (%s) started=%v learner=%v", m.ID, m.Name, m.Started(), m.IsLearner)
		}
		names = append(names, m.Name)
	}
	sort.Strings(names)
	if got := strings.Join(names, ","); got != want {
		f.t.Fatalf("etcd members %s, want %s", got, want)
	}
	// A removed member's pod may still be terminating: it has to be gone within a deadline.
	f.Eventually("member pods "+want, 2*time.Minute, func() (bool, error) {
		out, err := f.NS("get", "pods", "-l", "etcd.operator.dev/cluster="+name, "-o",
			"jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}")
		if err != nil {
			return false, err
		}
		pods := strings.Fields(out)
		sort.Strings(pods)
		if got := strings.Join(pods, ","); got != want {
			return false, fmt.Errorf("member pods %s, want %s", got, want)
		}
		return true, nil
	})
}

// ClientEtcdctl runs etcdctl against the cluster's client Service, the way an application in
// the cluster reaches etcd: inside pod (a member's), or, for a cluster whose client port uses
// TLS, inside the cluster's client pod (ClientPod), with the client certificate the operator
// keeps for applications. A member's pod cannot reach the Service there: its etcdctl is bound
// to its own member by the container's ETCDCTL_ variables, which no flag may override.
func (f *Framework) ClientEtcdctl(cluster, pod string, args ...string) (string, error) {
	c, err := f.GetEtcdCluster(cluster)
	if err != nil {
		return "", err
	}
	if !c.ClientTLS() {
		ep := fmt.Sprintf("--endpoints=http://%s:2379", f.ClientServiceHost(cluster))
		cmd := append([]string{"etcdctl", ep, "--command-timeout=5s"}, args...)
		return f.Exec(pod, EtcdContainer, cmd...)
	}
	secret := ClientSecretName(cluster)
	cmd := append([]string{"etcdctl", "--endpoints=https://" + f.ClientServiceHost(cluster) + ":2379",
		"--cacert=" + SecretFile(secret, SecretCA), "--cert=" + SecretFile(secret, SecretCert),
		"--key=" + SecretFile(secret, SecretKey), "--command-timeout=5s"}, args...)
	return f.Exec(f.ClientPod(cluster), EtcdctlContainer, cmd...)
}

// ClientServiceHost is the full name of the cluster's client Service, which the certificate
// its members serve to clients names.
func (f *Framework) ClientServiceHost(cluster string) string {
	return fmt.Sprintf("%s-client.%s.svc", cluster, f.Namespace)
}

// MemberHost is the name of the member with the given ordinal (its own Service's), which its
// peers dial and its certificates name.
func (f *Framework) MemberHost(cluster string, ordinal int) string {
	return fmt.Sprintf("%s-%d.%s.svc", cluster, ordinal, f.Namespace)
}
