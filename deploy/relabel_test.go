package deploy

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// relabelRule is one of Prometheus' relabel_configs, or one of a PodMonitor's relabelings, in
// the fields and actions the monitoring files use.
type relabelRule struct {
	SourceLabels []string
	Separator    string
	Regex        string
	TargetLabel  string
	Replacement  string
	Action       string
}

// relabel runs the rules over a target's labels as Prometheus does (anchored RE2, ";" between
// source labels, replacement $1, action replace unless told); ok is false once a rule drops
// the target.
func relabel(t *testing.T, in map[string]string, rules []relabelRule) (out map[string]string, ok bool) {
	t.Helper()
	out = map[string]string{}
	for k, v := range in {
		out[k] = v
	}
	for _, r := range rules {
		sep, expr, repl, action := r.Separator, r.Regex, r.Replacement, strings.ToLower(r.Action)
		if sep == "" {
			sep = ";"
		}
		if expr == "" {
			expr = "(.*)"
		}
		if repl == "" {
			repl = "$1"
		}
		re, err := regexp.Compile("^(?:" + expr + ")$")
		if err != nil {
			t.Fatalf("regex %q: %v", r.Regex, err)
		}
		values := make([]string, len(r.SourceLabels))
		for i, l := range r.SourceLabels {
			values[i] = out[l]
		}
		value := strings.Join(values, sep)
		m := re.FindStringSubmatchIndex(value)
		switch action {
		case "keep":
			if m == nil {
				return nil, false
			}
		case "drop":
			if m != nil {
				return nil, false
			}
		case "", "replace":
			if m == nil {
				continue
			}
			if v := string(re.ExpandString(nil, repl, value, m)); v != "" {
				out[r.TargetLabel] = v
			} else {
				delete(out, r.TargetLabel)
			}
		default:
			t.Fatalf("relabel action %q is not one this test knows", r.Action)
		}
	}
	return out, true
}

// labelNameChars are those Prometheus keeps in a label name made from a Kubernetes name.
var labelNameChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// podTargets are the targets Prometheus' Kubernetes discovery (role pod) finds for pod p: one
// per declared port of each container, with the meta labels the monitoring files read.
func podTargets(p *corev1.Pod, ip string) []map[string]string {
	base := map[string]string{
		"__meta_kubernetes_namespace": p.Namespace,
		"__meta_kubernetes_pod_name":  p.Name,
		"__meta_kubernetes_pod_ip":    ip,
	}
	for k, v := range p.Labels {
		name := labelNameChars.ReplaceAllString(k, "_")
		base["__meta_kubernetes_pod_label_"+name] = v
		base["__meta_kubernetes_pod_labelpresent_"+name] = "true"
	}
	var out []map[string]string
	for _, ctr := range p.Spec.Containers {
		for _, port := range ctr.Ports {
			t := map[string]string{}
			for k, v := range base {
				t[k] = v
			}
			t["__meta_kubernetes_pod_container_name"] = ctr.Name
			t["__meta_kubernetes_pod_container_port_name"] = port.Name
			t["__meta_kubernetes_pod_container_port_number"] = strconv.Itoa(int(port.ContainerPort))
			t["__address__"] = net.JoinHostPort(ip, strconv.Itoa(int(port.ContainerPort)))
			out = append(out, t)
		}
	}
	return out
}

// plaintextMetricsPorts are the ports on which the etcd of member pod p serves its metrics in
// plaintext, read from etcd's own flags: the client port when it listens for http, the
// metrics port when --listen-metrics-urls says so.
func plaintextMetricsPorts(p *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, ctr := range p.Spec.Containers {
		for _, a := range append(append([]string{}, ctr.Command...), ctr.Args...) {
			for _, flag := range []string{"--listen-client-urls=", "--listen-metrics-urls="} {
				if v, ok := strings.CutPrefix(a, flag); ok {
					for _, u := range strings.Split(v, ",") {
						if rest, plain := strings.CutPrefix(u, "http://"); plain {
							_, port, _ := net.SplitHostPort(rest)
							out[port] = true
						}
					}
				}
			}
		}
	}
	return out
}

// describe prints a target for a test's message.
func describe(targets []map[string]string) string {
	var s []string
	for _, t := range targets {
		s = append(s, fmt.Sprintf("%s(%s)", t["__address__"], t["__meta_kubernetes_pod_container_port_name"]))
	}
	return strings.Join(s, ", ")
}
