package deploy

import (
	"slices"
	"testing"
)

// monitoringKinds are the Prometheus operator's kinds the chart renders, as helm's
// --api-versions names them.
var monitoringKinds = []string{"monitoring.coreos.com/v1/PodMonitor", "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"}

// kindsOf lists the kinds of the monitoring objects rendered.
func kindsOf(r rendered) []string {
	var kinds []string
	for _, k := range r.keys() {
		if o := r[k]; o.Body["apiVersion"] == "monitoring.coreos.com/v1" {
			kinds = append(kinds, o.Kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// TestChartMonitoringOnlyWhereServed: the monitoring objects are rendered only when enabled
// and, unless monitoring.requireAPI is false, only the kinds the cluster serves; each on its
// own switch.
func TestChartMonitoringOnlyWhereServed(t *testing.T) {
	all := []string{"PodMonitor", "PrometheusRule", "ServiceMonitor"}
	for _, tc := range []struct {
		name        string
		sets        []string
		apiVersions []string
		want        []string
	}{
		{"off by default, served", nil, monitoringKinds, nil},
		{"enabled, not served", []string{"monitoring.enabled=true"}, nil, nil},
		{"enabled, served", []string{"monitoring.enabled=true"}, monitoringKinds, all},
		{"enabled, only PodMonitor served", []string{"monitoring.enabled=true"}, monitoringKinds[:1], []string{"PodMonitor"}},
		{"enabled, not required to be served", []string{"monitoring.enabled=true", "monitoring.requireAPI=false"}, nil, all},
		{"enabled, rules off", []string{"monitoring.enabled=true", "monitoring.prometheusRule.enabled=false"}, monitoringKinds, []string{"PodMonitor", "ServiceMonitor"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kindsOf(renderChart(t, "etcd-operator-system", tc.sets, tc.apiVersions...)); !slices.Equal(got, tc.want) {
				t.Errorf("rendered %v, want %v", got, tc.want)
			}
		})
	}
}

// TestChartMonitoringIsDeploys: the chart's PodMonitor, ServiceMonitor and PrometheusRule are
// deploy/monitoring's, spec for spec (the alerts are files/alerts.rules.yaml, a copy of
// deploy/monitoring/alerts.rules.yaml), but for the namespaces a namespaced release looks in
// and the release's label in the ServiceMonitor's selector; monitoring.labels reach all three.
func TestChartMonitoringIsDeploys(t *testing.T) {
	want := map[string]map[string]any{}
	for kind, file := range map[string]string{"PodMonitor": "podmonitor.yaml", "ServiceMonitor": "servicemonitor.yaml", "PrometheusRule": "prometheusrule.yaml"} {
		want[kind] = decodeLoose(t, "monitoring/"+file)
	}
	for _, v := range chartVariants {
		t.Run(v.name, func(t *testing.T) {
			sets := append([]string{"monitoring.enabled=true", "monitoring.labels.release=prometheus"}, v.sets...)
			r := renderChart(t, v.namespace, sets, monitoringKinds...)
			for kind, w := range want {
				o := r.one(t, kind)
				meta, _ := o.Body["metadata"].(map[string]any)
				if labels, _ := meta["labels"].(map[string]any); labels["release"] != "prometheus" {
					t.Errorf("%s labels %v lack monitoring.labels", kind, labels)
				}
				spec, _ := o.Body["spec"].(map[string]any)
				for _, p := range stripChartLabels(spec, kind+".spec") {
					t.Error(p)
				}
				wantSpec, _ := w["spec"].(map[string]any)
				switch {
				case kind == "ServiceMonitor" || kind == "PodMonitor" && v.name == "namespaced":
					wantSpec = copyMap(wantSpec)
					wantSpec["namespaceSelector"] = map[string]any{"matchNames": []any{v.namespace}}
				}
				for _, d := range diff(wantSpec, spec, kind+".spec") {
					t.Error(d)
				}
			}
		})
	}
}

// copyMap copies the top level of m.
func copyMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
