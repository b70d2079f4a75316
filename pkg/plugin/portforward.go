package plugin

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// Forwarder makes a port of a member pod reachable from this machine.
type Forwarder interface {
	// Forward makes port of pod reachable at the returned address (host:port) until Close.
	// It fails when the API server refuses the forward (no such pod, a pod not running, no
	// pods/portforward permission).
	Forward(ctx context.Context, pod *corev1.Pod, port int32) (string, error)
	// Close ends every forward made.
	Close()
}

// NewPortForwarder forwards through the API server, as kubectl port-forward does: a SPDY
// connection to the pod's portforward subresource per pod, served on a free port of the
// loopback address. The kubelet connects to the port inside the pod's network namespace, so
// neither the cluster's network nor its NetworkPolicy is in the way.
func NewPortForwarder(cfg *rest.Config, kube kubernetes.Interface) Forwarder {
	return &portForwarder{cfg: cfg, kube: kube}
}

type portForwarder struct {
	cfg  *rest.Config
	kube kubernetes.Interface

	mu    sync.Mutex
	stops []chan struct{}
}

var _ Forwarder = (*portForwarder)(nil)

func (f *portForwarder) Forward(ctx context.Context, pod *corev1.Pod, port int32) (string, error) {
	rt, upgrader, err := spdy.RoundTripperFor(f.cfg)
	if err != nil {
		return "", fmt.Errorf("port-forwarding to pod %s: %w", pod.Name, err)
	}
	url := f.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, url)
	stop, ready := make(chan struct{}), make(chan struct{})
	// io.Discard: the forwarder's "Forwarding from" and "Handling connection" lines are
	// kubectl port-forward's output, not this command's.
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(int(port))}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return "", fmt.Errorf("port-forwarding to pod %s: %w", pod.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		return "", fmt.Errorf("port-forwarding to pod %s: %w", pod.Name, err)
	case <-ctx.Done():
		close(stop)
		return "", fmt.Errorf("port-forwarding to pod %s: %w", pod.Name, ctx.Err())
	}
	f.mu.Lock()
	f.stops = append(f.stops, stop)
	f.mu.Unlock()
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		return "", fmt.Errorf("port-forwarding to pod %s: no local port (%v)", pod.Name, err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))), nil
}

func (f *portForwarder) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.stops {
		close(s)
	}
	f.stops = nil
}
