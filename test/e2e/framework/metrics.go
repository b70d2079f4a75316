package framework

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// OperatorMetricsService is deploy/'s Service in front of the operator's /metrics.
const OperatorMetricsService = "etcd-operator-metrics"

// Sample is one series of a Prometheus text exposition and its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Has reports whether every label of want is on the sample, with its value.
func (s Sample) Has(want map[string]string) bool {
	for k, v := range want {
		if s.Labels[k] != v {
			return false
		}
	}
	return true
}

// OperatorMetrics reads the operator's /metrics as Prometheus would, through the API server's
// proxy to the operator's metrics Service (so the Service is checked too).
func (f *Framework) OperatorMetrics() ([]Sample, error) {
	body, err := f.apiGet(fmt.Sprintf("/api/v1/namespaces/%s/services/%s:metrics/proxy/metrics", OperatorNamespace, OperatorMetricsService))
	if err != nil {
		return nil, err
	}
	return ParseMetrics(string(body))
}

// FindSamples returns the samples of metric name that carry every label of want.
func FindSamples(samples []Sample, name string, want map[string]string) []Sample {
	var out []Sample
	for _, s := range samples {
		if s.Name == name && s.Has(want) {
			out = append(out, s)
		}
	}
	return out
}

var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// ParseMetrics reads the samples of a Prometheus text exposition (comments skipped; no
// timestamps, as client_golang writes it).
func ParseMetrics(text string) ([]Sample, error) {
	var out []Sample
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics line %q has no value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		s := Sample{Name: line[:i], Labels: map[string]string{}, Value: v}
		if name, labels, ok := strings.Cut(line[:i], "{"); ok {
			s.Name = name
			for _, m := range labelPair.FindAllStringSubmatch(labels, -1) {
				s.Labels[m[1]] = m[2]
			}
		}
		out = append(out, s)
	}
	return out, nil
}
