// Package framework drives end-to-end tests against a real cluster the way a
// user does: kubectl apply, patch, scale, delete, exec. It takes the cluster from
// KUBECONFIG (make e2e sets it), gives every test a fresh namespace, waits on
// conditions with deadlines (polling, never a fixed sleep as synchronization),
// and dumps operator logs, events and pod states when a test fails.
//
// It only needs kubectl on PATH (or in $KUBECTL), the Go standard library, and the
// project's pkg/pki for the certificates of the TLS tests.
package framework

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// OperatorNamespace is where deploy/ installs the operator.
const OperatorNamespace = "etcd-operator-system"

// DefaultTimeout bounds a single kubectl call.
const DefaultTimeout = 2 * time.Minute

// PollInterval is how often Eventually re-checks a condition.
const PollInterval = 500 * time.Millisecond

// Framework is one test's handle on the cluster and on its namespace.
type Framework struct {
	t *testing.T
	// Namespace is the test's own namespace, created by New.
	Namespace string
	kubectl   string
	// writers counts the writers started, so that each gets a pod of its own.
	writers int
	// clientPods are the client pods started (ClientPod), by cluster.
	clientPods map[string]string
}

// New checks that a cluster is reachable, creates a fresh namespace for t and
// registers its cleanup: on success the namespace is deleted, on failure it is
// kept and Dump prints what is needed to understand the failure.
func New(t *testing.T) *Framework {
	t.Helper()
	if os.Getenv("KUBECONFIG") == "" {
		t.Fatal("KUBECONFIG is not set: run the suite with make e2e, or export KUBECONFIG=$(make -s kubeconfig)")
	}
	kubectl := os.Getenv("KUBECTL")
	if kubectl == "" {
		kubectl = "kubectl"
	}
	f := &Framework{t: t, kubectl: kubectl}
	f.Namespace = namespaceName(t.Name())
	f.MustKubectl("create", "namespace", f.Namespace)
	t.Logf("namespace %s", f.Namespace)
	t.Cleanup(func() {
		if t.Failed() {
			f.Dump()
			// The dump has the writers' last lines; a writer left running would load the
			// node for every test still to run (a put after another, for the rest of the
			// suite).
			if _, err := f.NS("delete", "pods", "-l", "app.kubernetes.io/name=e2e-writer", "--wait=false"); err != nil {
				t.Logf("stopping the writers of %s: %v", f.Namespace, err)
			}
			t.Logf("namespace %s kept for inspection, its writers stopped (make down removes everything)", f.Namespace)
			return
		}
		if _, err := f.Kubectl("delete", "namespace", f.Namespace, "--wait=false"); err != nil {
			t.Logf("deleting namespace %s: %v", f.Namespace, err)
		}
	})
	return f
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// namespaceName turns a test name into a unique DNS-1123 label: e2e-<name>-<random>.
func namespaceName(test string) string {
	n := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(test), "-"), "-")
	if len(n) > 40 {
		n = strings.TrimRight(n[:40], "-")
	}
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "e2e-" + n + "-" + hex.EncodeToString(b)
}

// T returns the test the framework belongs to.
func (f *Framework) T() *testing.T { return f.t }

// run executes kubectl with args and optional stdin and returns its stdout; on
// failure the error carries stderr.
func (f *Framework) run(stdin string, args ...string) (string, error) {
	return f.runFor(DefaultTimeout, stdin, args...)
}

// KubectlFor runs kubectl with args (no namespace added), for a command that may take longer
// than DefaultTimeout (kubectl drain).
func (f *Framework) KubectlFor(timeout time.Duration, args ...string) (string, error) {
	return f.runFor(timeout, "", args...)
}

func (f *Framework) runFor(timeout time.Duration, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.kubectl, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Kubectl runs kubectl with args as given (no namespace added).
func (f *Framework) Kubectl(args ...string) (string, error) { return f.run("", args...) }

// KubectlStdin runs kubectl with args (no namespace added) and stdin.
func (f *Framework) KubectlStdin(stdin string, args ...string) (string, error) {
	return f.run(stdin, args...)
}

// MustKubectl runs kubectl with args and fails the test on error.
func (f *Framework) MustKubectl(args ...string) string {
	f.t.Helper()
	out, err := f.run("", args...)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// NS runs kubectl with args in the test namespace.
func (f *Framework) NS(args ...string) (string, error) {
	return f.run("", append([]string{"-n", f.Namespace}, args...)...)
}

// MustNS runs kubectl with args in the test namespace and fails the test on error.
func (f *Framework) MustNS(args ...string) string {
	f.t.Helper()
	out, err := f.NS(args...)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// Apply applies a YAML manifest in the test namespace (kubectl apply -f -).
func (f *Framework) Apply(manifest string) {
	f.t.Helper()
	if _, err := f.run(manifest, "-n", f.Namespace, "apply", "-f", "-"); err != nil {
		f.t.Fatal(err)
	}
}

// ApplyFile applies a manifest file or folder in the test namespace (kubectl apply -f PATH).
func (f *Framework) ApplyFile(path string) {
	f.t.Helper()
	f.MustNS("apply", "-f", path)
}

// Patch patches resource (e.g. "etcdcluster/demo") with a merge patch.
func (f *Framework) Patch(resource, mergePatch string) {
	f.t.Helper()
	f.MustNS("patch", resource, "--type=merge", "-p", mergePatch)
}

// Scale sets the replicas of resource (kubectl scale --replicas=N).
func (f *Framework) Scale(resource string, replicas int) {
	f.t.Helper()
	f.MustNS("scale", resource, fmt.Sprintf("--replicas=%d", replicas))
}

// Delete deletes resources in the test namespace and returns without waiting for them to go.
func (f *Framework) Delete(resources ...string) {
	f.t.Helper()
	f.MustNS(append([]string{"delete", "--wait=false"}, resources...)...)
}

// GetJSON decodes resource (KIND or KIND/NAME, as kubectl takes it) of the test namespace,
// as `kubectl get resource -o json` prints it, into out. The kinds tests poll by name, and
// the lists of apiLists, are read through the suite's API proxy (api.go), the rest with
// kubectl.
func (f *Framework) GetJSON(resource string, out any) error {
	var s []byte
	kind, name, _ := strings.Cut(resource, "/")
	path := ""
	if p, ok := apiPaths[kind]; ok && name != "" {
		path = fmt.Sprintf(p, url.PathEscape(f.Namespace), url.PathEscape(name))
	} else if p, ok := apiLists[kind]; ok && name == "" {
		path = fmt.Sprintf(p, url.PathEscape(f.Namespace))
	}
	if path != "" {
		b, err := f.apiGet(path)
		if err != nil {
			return err
		}
		s = b
	} else {
		text, err := f.NS("get", resource, "-o", "json")
		if err != nil {
			return err
		}
		s = []byte(text)
	}
	if err := json.Unmarshal(s, out); err != nil {
		return fmt.Errorf("decoding %s: %w", resource, err)
	}
	return nil
}

// Eventually polls cond every PollInterval until it returns true, and fails the
// test when timeout passes first, with the last error cond returned. cond may
// return an error for a transient state; it is reported only on timeout.
func (f *Framework) Eventually(desc string, timeout time.Duration, cond func() (bool, error)) {
	f.t.Helper()
	if err := Poll(timeout, cond); err != nil {
		f.t.Fatalf("waiting %s for %s: %v", timeout, desc, err)
	}
}

// Poll calls cond every PollInterval until it returns true or timeout passes;
// then it returns an error naming cond's last error.
func Poll(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last == nil {
				last = fmt.Errorf("condition still false")
			}
			return fmt.Errorf("timed out: %w", last)
		}
		time.Sleep(PollInterval)
	}
}

// WaitFor waits with `kubectl wait --for=FOR` on resource in the test namespace,
// e.g. WaitFor("pod/x", "condition=Ready", time.Minute) or "jsonpath={.status.phase}=Bound".
func (f *Framework) WaitFor(resource, condition string, timeout time.Duration) {
	f.t.Helper()
	// kubectl wait fails at once when the object does not exist yet: poll until it does.
	f.Eventually(resource+" "+condition, timeout, func() (bool, error) {
		_, err := f.NS("wait", resource, "--for="+condition, "--timeout=5s")
		return err == nil, err
	})
}

// Exec runs a command in a container of pod in the test namespace (kubectl exec)
// and returns its stdout.
func (f *Framework) Exec(pod, container string, command ...string) (string, error) {
	args := []string{"exec", pod}
	if container != "" {
		args = append(args, "-c", container)
	}
	return f.NS(append(append(args, "--"), command...)...)
}

// OperatorDeployed reports whether deploy/ has been applied (namespace etcd-operator-system exists).
func (f *Framework) OperatorDeployed() bool {
	_, err := f.Kubectl("get", "namespace", OperatorNamespace)
	return err == nil
}
