package framework

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// EtcdContainer is the container name the etcd member pods use.
const EtcdContainer = "etcd"

// Member is one entry of `etcdctl member list -w json`.
type Member struct {
	ID         uint64   `json:"ID"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	IsLearner  bool     `json:"isLearner"`
}

// Started reports whether the member has started (an added member that never
// started has no name and no client URLs).
func (m Member) Started() bool { return m.Name != "" && len(m.ClientURLs) > 0 }

// Etcdctl runs etcdctl inside the etcd container of pod, against that member's
// own client endpoint. The etcd image has no shell: etcdctl is exec'ed directly.
// No endpoint is passed: etcdctl's default is the member's own plaintext port, and a member
// with client TLS sets ETCDCTL_ENDPOINTS, ETCDCTL_CACERT, ETCDCTL_CERT and ETCDCTL_KEY in its
// container, which etcdctl refuses to run with when a flag names the same setting.
func (f *Framework) Etcdctl(pod string, args ...string) (string, error) {
	cmd := append([]string{"etcdctl", "--command-timeout=5s"}, args...)
	return f.Exec(pod, EtcdContainer, cmd...)
}

// MemberList returns the members that pod's etcd reports.
func (f *Framework) MemberList(pod string) ([]Member, error) {
	out, err := f.Etcdctl(pod, "member", "list", "-w", "json")
	if err != nil {
		return nil, err
	}
	var resp struct {
		Members []Member `json:"members"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		return nil, fmt.Errorf("decoding member list from %s: %w", pod, err)
	}
	return resp.Members, nil
}

// EtcdHealthy reports whether pod's etcd sees exactly n started voting members
// and every member's endpoint is healthy (etcdctl endpoint health --cluster).
func (f *Framework) EtcdHealthy(pod string, n int) (bool, error) {
	members, err := f.MemberList(pod)
	if err != nil {
		return false, err
	}
	started := 0
	for _, m := range members {
		if m.Started() && !m.IsLearner {
			started++
		}
	}
	if len(members) != n || started != n {
		return false, fmt.Errorf("%s sees %d members, %d started voters, want %d", pod, len(members), started, n)
	}
	out, err := f.Etcdctl(pod, "endpoint", "health", "--cluster", "-w", "json")
	if err != nil {
		return false, err
	}
	var health []struct {
		Endpoint string `json:"endpoint"`
		Health   bool   `json:"health"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &health); err != nil {
		return false, fmt.Errorf("decoding endpoint health from %s: %w", pod, err)
	}
	var bad []string
	for _, h := range health {
		if !h.Health {
			bad = append(bad, h.Endpoint+": "+h.Error)
		}
	}
	if len(health) != n || len(bad) > 0 {
		return false, fmt.Errorf("%d endpoints, unhealthy: %s", len(health), strings.Join(bad, "; "))
	}
	return true, nil
}

// WaitEtcdHealthy waits until pod's etcd reports n started, healthy members.
func (f *Framework) WaitEtcdHealthy(pod string, n int, timeout time.Duration) {
	f.t.Helper()
	f.Eventually(fmt.Sprintf("etcd %s to report %d healthy members", pod, n), timeout, func() (bool, error) {
		return f.EtcdHealthy(pod, n)
	})
}

// failedLookup matches a log line of etcd or of Go's resolver (member-init, which runs in
// the etcd container before etcd) saying that a name could not be resolved.
var failedLookup = regexp.MustCompile(`failed to resolve URL Host|no such host|server misbehaving`)

// FailedLookups returns the log lines, of every container of the given member pods, that
// report a failed DNS lookup of a member of cluster. Such a lookup is what makes cluster DNS
// cache a "no such host" for 30 s: the operator orders its steps so that none happens.
func (f *Framework) FailedLookups(cluster string, pods ...string) ([]string, error) {
	// A member's name: its own Service's, or its pod's through the headless Service.
	name := regexp.MustCompile(regexp.QuoteMeta(cluster) + `-[0-9]+\.(` + regexp.QuoteMeta(cluster) + `\.)?` +
		regexp.QuoteMeta(f.Namespace) + `\.svc`)
	var out []string
	for _, pod := range pods {
		logs, err := f.NS("logs", pod, "--all-containers", "--prefix")
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(logs, "\n") {
			if failedLookup.MatchString(line) && name.MatchString(line) {
				out = append(out, line)
			}
		}
	}
	return out, nil
}
