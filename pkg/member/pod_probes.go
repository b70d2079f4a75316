package member

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probePaths picks the health endpoints: /readyz and /livez exist from etcd 3.6 on; older
// versions only have /health.
func probePaths(version string) (ready, live string) {
	major, minor := majorMinor(version)
	if major > 3 || (major == 3 && minor >= 6) {
		return "/readyz", "/livez"
	}
	return "/health", "/health?serializable=true"
}

func majorMinor(version string) (int, int) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0
	}
	major, _ := strconv.Atoi(parts[0])
	minor, _ := strconv.Atoi(parts[1])
	return major, minor
}

// probePort is where the kubelet probes a member's health: the client port, or, when that
// demands a client certificate, the plaintext metrics port (which member-init answers on too
// while it waits).
func probePort(m ClientMode) int32 {
	if m.TLS() {
		return MetricsPort
	}
	return ClientPort
}

func httpProbe(path string, port int32) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP,
	}}
}
