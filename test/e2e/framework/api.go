package framework

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// The suite's tests poll: an EtcdCluster's status, a pod, the writer's log, twice a second
// each, several tests at a time. A kubectl process per check costs a Go binary's start and a
// read of its discovery cache, and with a few tests in parallel those processes alone kept
// both of the machine's cores busy, slowing the clusters under test. So reads that are polled
// go through one `kubectl proxy` per test binary, on a loopback port, as plain HTTP GETs;
// everything a user does (apply, patch, scale, delete, exec) still runs kubectl.

// apiProxy is the suite's `kubectl proxy`, started on first use and stopped by StopAPIProxy.
var apiProxy struct {
	mu   sync.Mutex
	base string
	// done is closed once the running proxy has exited; nil before the first start.
	done   chan struct{}
	cancel context.CancelFunc
}

var apiClient = &http.Client{Timeout: 30 * time.Second}

// proxyBase returns the URL of the running proxy, starting one if none runs.
func (f *Framework) proxyBase() (string, error) {
	apiProxy.mu.Lock()
	defer apiProxy.mu.Unlock()
	if apiProxy.done != nil {
		select {
		case <-apiProxy.done:
			// It exited (killed, or the API server went away): start another.
		default:
			return apiProxy.base, nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, f.kubectl, "proxy", "--address=127.0.0.1", "--port=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return "", err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return "", fmt.Errorf("starting kubectl proxy: %w", err)
	}
	// kubectl prints "Starting to serve on 127.0.0.1:PORT" once it listens.
	line, err := bufio.NewReader(out).ReadString('\n')
	_, addr, found := strings.Cut(strings.TrimSpace(line), "Starting to serve on ")
	if err != nil || !found {
		cancel()
		_ = cmd.Wait()
		return "", fmt.Errorf("kubectl proxy did not start: %q %v", line, err)
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(done)
	}()
	apiProxy.done, apiProxy.base, apiProxy.cancel = done, "http://"+addr, cancel
	return apiProxy.base, nil
}

// StopAPIProxy ends the suite's `kubectl proxy`, if one runs (TestMain calls it last).
func StopAPIProxy() {
	apiProxy.mu.Lock()
	defer apiProxy.mu.Unlock()
	if apiProxy.cancel != nil {
		apiProxy.cancel()
		<-apiProxy.done
	}
	apiProxy.done, apiProxy.cancel = nil, nil
}

// apiPaths maps the kinds tests read by name to their API paths in the test's namespace.
var apiPaths = map[string]string{
	"etcdcluster":   "/apis/etcd.operator.dev/v1alpha1/namespaces/%s/etcdclusters/%s",
	"pod":           "/api/v1/namespaces/%s/pods/%s",
	"pvc":           "/api/v1/namespaces/%s/persistentvolumeclaims/%s",
	"networkpolicy": "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies/%s",
	"etcdbackup":    "/apis/etcd.operator.dev/v1alpha1/namespaces/%s/etcdbackups/%s",
	"secret":        "/api/v1/namespaces/%s/secrets/%s",
}

// apiLists maps the kinds tests list, in the test's namespace, to their API paths: a list
// polled through the proxy starts no kubectl.
var apiLists = map[string]string{
	"etcdbackups": "/apis/etcd.operator.dev/v1alpha1/namespaces/%s/etcdbackups",
}

// apiGet reads path through the proxy. An object that does not exist is an error that says
// NotFound, as kubectl's does.
func (f *Framework) apiGet(path string) ([]byte, error) {
	return f.apiGetWith(apiClient, path)
}

// GetAPI decodes what the API server answers to a GET of path (a list across namespaces, a
// node), read through the suite's proxy, into out.
func (f *Framework) GetAPI(path string, out any) error {
	b, err := f.apiGet(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding GET %s: %w", path, err)
	}
	return nil
}

// apiGetWith is apiGet with a client of the caller's (a shorter timeout).
func (f *Framework) apiGetWith(client *http.Client, path string) ([]byte, error) {
	base, err := f.proxyBase()
	if err != nil {
		return nil, err
	}
	resp, err := client.Get(base + path)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var status struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &status) == nil && status.Reason != "" {
			return nil, fmt.Errorf("GET %s: %s: %s", path, status.Reason, status.Message)
		}
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// podLog is the log of pod's only (or first) container, as `kubectl logs POD` prints it.
func (f *Framework) podLog(pod string) (string, error) {
	body, err := f.apiGet(fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/log", url.PathEscape(f.Namespace), url.PathEscape(pod)))
	return string(body), err
}

// healthClient asks one member at a time: a member that is down must not hold a watch up.
var healthClient = &http.Client{Timeout: 2 * time.Second}

// QuorumAnswers reports whether a member of the cluster (pods <cluster>-0..n-1) answers etcd's
// /health with true, asked through the API server's proxy to its pod's client port, and else
// what each said. etcd says true only when it has a leader and a linearizable read went
// through, that is with a quorum: one true answer speaks for the cluster. It reads etcd
// itself, so it sees the cluster while the operator is down too.
func (f *Framework) QuorumAnswers(cluster string, n int) (bool, string) {
	var said []string
	for _, pod := range MemberNames(cluster, n) {
		body, err := f.apiGetWith(healthClient, fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:2379/proxy/health",
			url.PathEscape(f.Namespace), url.PathEscape(pod)))
		if err != nil {
			said = append(said, fmt.Sprintf("%s: %v", pod, err))
			continue
		}
		var health struct {
			Health string `json:"health"`
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(body, &health); err != nil {
			said = append(said, fmt.Sprintf("%s: %q", pod, strings.TrimSpace(string(body))))
			continue
		}
		if health.Health == "true" {
			return true, ""
		}
		said = append(said, fmt.Sprintf("%s: health %s %s", pod, health.Health, health.Reason))
	}
	return false, strings.Join(said, "; ")
}
