package framework

import "testing"

func TestParseMetrics(t *testing.T) {
	text := `# HELP etcd_operator_cluster_members_desired Members.
# TYPE etcd_operator_cluster_members_desired gauge
etcd_operator_cluster_members_desired{name="demo",namespace="e2e-x"} 3
etcd_operator_cluster_condition{name="demo",namespace="e2e-x",reason="ClusterHealthy",type="Available"} 1
process_resident_memory_bytes 2.4576e+07
`
	samples, err := ParseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 3 {
		t.Fatalf("%d samples, want 3: %+v", len(samples), samples)
	}
	got := FindSamples(samples, "etcd_operator_cluster_condition", map[string]string{"namespace": "e2e-x", "type": "Available"})
	if len(got) != 1 || got[0].Value != 1 || got[0].Labels["reason"] != "ClusterHealthy" {
		t.Errorf("condition samples %+v", got)
	}
	if got := FindSamples(samples, "process_resident_memory_bytes", nil); len(got) != 1 || got[0].Value != 24576000 {
		t.Errorf("memory samples %+v", got)
	}
	if _, err := ParseMetrics("a_metric{x=\"1\"} notanumber"); err == nil {
		t.Error("a line without a number parsed")
	}
}
