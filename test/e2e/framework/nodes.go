package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// Node is the part of a Node object the tests read.
type Node struct {
	Name string
	// ProviderID is kind://docker/<cluster>/<node> on a kind node, empty on the local node.
	ProviderID string
	// Schedulable is false for a cordoned node or one with a NoSchedule or NoExecute taint
	// (kind's control plane when the cluster has workers).
	Schedulable bool
	Ready       bool
}

// Kind reports whether the node is a kind node, a container of a Docker engine.
func (n Node) Kind() bool { return strings.HasPrefix(n.ProviderID, "kind://") }

// Nodes returns the cluster's nodes, sorted by name.
func (f *Framework) Nodes() ([]Node, error) {
	out, err := f.Kubectl("get", "nodes", "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				ProviderID    string `json:"providerID"`
				Unschedulable bool   `json:"unschedulable"`
				Taints        []struct {
					Effect string `json:"effect"`
				} `json:"taints"`
			} `json:"spec"`
			Status struct {
				Conditions []struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("decoding nodes: %w", err)
	}
	var nodes []Node
	for _, it := range list.Items {
		n := Node{Name: it.Metadata.Name, ProviderID: it.Spec.ProviderID, Schedulable: !it.Spec.Unschedulable}
		for _, t := range it.Spec.Taints {
			if t.Effect == "NoSchedule" || t.Effect == "NoExecute" {
				n.Schedulable = false
			}
		}
		for _, c := range it.Status.Conditions {
			if c.Type == "Ready" {
				n.Ready = c.Status == "True"
			}
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, nil
}

// RequireKindWorkers skips the test unless the cluster is a kind cluster with at least n
// schedulable nodes, and returns those nodes. The multi-node tests need it: on the
// single-node local cluster, and on a one-node kind cluster, they are skipped, so that one
// suite runs everywhere.
func (f *Framework) RequireKindWorkers(n int) []Node {
	f.t.Helper()
	nodes, err := f.Nodes()
	if err != nil {
		f.t.Fatal(err)
	}
	var workers []Node
	for _, node := range nodes {
		if node.Kind() && node.Schedulable {
			workers = append(workers, node)
		}
	}
	if len(workers) < n {
		f.t.Skipf("needs a kind cluster with at least %d schedulable nodes; this one has %d nodes, %d schedulable kind nodes (CLUSTER=kind make up makes one)",
			n, len(nodes), len(workers))
	}
	return workers
}

// docker runs the docker CLI against the engine holding the kind nodes (DOCKER_HOST as
// make e2e sets it from hack/cluster.sh env).
func docker(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	bin := os.Getenv("DOCKER")
	if bin == "" {
		bin = "docker"
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// StopNode stops the container of kind node name (docker stop: the node's systemd halts,
// its kubelet, containerd and pods with it, and the container leaves the network). It
// registers a cleanup that starts the node again if the test did not.
func (f *Framework) StopNode(name string) {
	f.t.Helper()
	f.t.Cleanup(func() {
		if running, err := docker(time.Minute, "inspect", "-f", "{{.State.Running}}", name); err == nil && strings.TrimSpace(running) == "false" {
			f.t.Logf("starting node %s stopped by the test", name)
			if err := f.startNode(name, 3*time.Minute); err != nil {
				f.t.Errorf("node %s left stopped: %v", name, err)
			}
		}
	})
	if _, err := docker(time.Minute, "stop", name); err != nil {
		f.t.Fatal(err)
	}
}

// WaitNodeNotReady waits until the control plane reports node name NotReady (or Unknown).
func (f *Framework) WaitNodeNotReady(name string, timeout time.Duration) {
	f.t.Helper()
	f.Eventually("node "+name+" NotReady", timeout, func() (bool, error) {
		ready, err := f.nodeReady(name)
		if err == nil && ready {
			err = fmt.Errorf("node %s still Ready", name)
		}
		return err == nil, err
	})
}

// StartNode starts the container of kind node name again and waits until the node is Ready.
func (f *Framework) StartNode(name string, timeout time.Duration) {
	f.t.Helper()
	if err := f.startNode(name, timeout); err != nil {
		f.t.Fatal(err)
	}
}

func (f *Framework) startNode(name string, timeout time.Duration) error {
	if _, err := docker(time.Minute, "start", name); err != nil {
		return err
	}
	// Ready, and its not-ready and unreachable taints lifted by the node lifecycle controller a
	// moment later: the next test counts it schedulable.
	return Poll(timeout, func() (bool, error) {
		nodes, err := f.Nodes()
		if err != nil {
			return false, err
		}
		for _, n := range nodes {
			if n.Name == name && n.Ready && n.Schedulable {
				return true, nil
			}
		}
		return false, fmt.Errorf("node %s not Ready and schedulable yet", name)
	})
}

func (f *Framework) nodeReady(name string) (bool, error) {
	out, err := f.Kubectl("get", "node", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(out) == "True", nil
}

// PodNodes maps each named pod of the test namespace to the node it runs on.
func (f *Framework) PodNodes(pods ...string) (map[string]string, error) {
	m := map[string]string{}
	for _, p := range pods {
		out, err := f.NS("get", "pod", p, "-o", "jsonpath={.spec.nodeName}")
		if err != nil {
			return nil, err
		}
		m[p] = strings.TrimSpace(out)
	}
	return m, nil
}

// MoveOff moves the pods of a Deployment (namespace, name, its pods' label selector) off
// node: the node is cordoned, the Deployment restarted and waited for, and the node
// uncordoned. Nothing happens when none of its pods runs there. A test that stops a node uses
// it for what the cluster itself needs (the operator, cluster DNS), so that the test is about
// the member it stops.
func (f *Framework) MoveOff(node, namespace, deployment, selector string) {
	f.t.Helper()
	out, err := f.Kubectl("-n", namespace, "get", "pods", "-l", selector, "-o", "jsonpath={.items[*].spec.nodeName}")
	if err != nil {
		f.t.Fatal(err)
	}
	if !strings.Contains(" "+out+" ", " "+node+" ") {
		return
	}
	f.MustKubectl("cordon", node)
	defer f.MustKubectl("uncordon", node)
	f.MustKubectl("-n", namespace, "rollout", "restart", "deployment/"+deployment)
	f.MustKubectl("-n", namespace, "rollout", "status", "deployment/"+deployment, "--timeout=3m")
	f.Eventually(deployment+"'s pods off "+node, 2*time.Minute, func() (bool, error) {
		out, err := f.Kubectl("-n", namespace, "get", "pods", "-l", selector, "-o", "jsonpath={.items[*].spec.nodeName}")
		return err == nil && !strings.Contains(" "+out+" ", " "+node+" "), fmt.Errorf("on nodes %q (%v)", out, err)
	})
}

// KillContainer kills the running container of pod (in the test's namespace) named container
// on kind node name, through the node's containerd (ctr: kind's nodes here carry no crictl),
// with SIGKILL, as a process that dies would be: the kubelet starts it again in the same pod
// and counts a restart.
func (f *Framework) KillContainer(node, pod, container string) {
	f.t.Helper()
	filter := fmt.Sprintf(`labels."io.kubernetes.container.name"==%s,labels."io.kubernetes.pod.name"==%s,labels."io.kubernetes.pod.namespace"==%s`,
		container, pod, f.Namespace)
	out, err := docker(time.Minute, "exec", node, "ctr", "-n", "k8s.io", "containers", "ls", "-q", filter)
	if err != nil {
		f.t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, id := range strings.Fields(out) {
		ours[id] = true
	}
	// The pod's earlier containers are still listed once they exited: the one to kill is the
	// one whose task runs.
	tasks, err := docker(time.Minute, "exec", node, "ctr", "-n", "k8s.io", "tasks", "ls")
	if err != nil {
		f.t.Fatal(err)
	}
	var running []string
	for _, line := range strings.Split(tasks, "\n") {
		if fs := strings.Fields(line); len(fs) == 3 && ours[fs[0]] && fs[2] == "RUNNING" {
			running = append(running, fs[0])
		}
	}
	if len(running) != 1 {
		f.t.Fatalf("running containers %s of pod %s on node %s: %q, want one", container, pod, node, running)
	}
	if _, err := docker(time.Minute, "exec", node, "ctr", "-n", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", running[0]); err != nil {
		f.t.Fatal(err)
	}
}
