package operator

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

func TestNewLoggerJSON(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger("debug", LogFormatJSON, &buf)
	if err != nil {
		t.Fatalf("NewLogger: %v", err)
	}
	log.WithField("cluster", "ns/a").Debug("Reconcile pass done")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("log line %q is not JSON: %v", buf.String(), err)
	}
	if line["cluster"] != "ns/a" || line["msg"] != "Reconcile pass done" || line["level"] != "debug" {
		t.Errorf("log line = %v", line)
	}
}

func TestNewLoggerRejectsBadSettings(t *testing.T) {
	if _, err := NewLogger("loud", LogFormatText, &bytes.Buffer{}); err == nil {
		t.Error("NewLogger accepted level loud")
	}
	if _, err := NewLogger("info", "xml", &bytes.Buffer{}); err == nil {
		t.Error("NewLogger accepted format xml")
	}
}

func TestRouteKlog(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger("info", LogFormatJSON, &buf)
	if err != nil {
		t.Fatalf("NewLogger: %v", err)
	}
	RouteKlog(logrus.NewEntry(log))
	defer klog.ClearLogger()
	klog.InfoS("Successfully acquired lease", "lock", "ops/etcd-operator")
	klog.V(4).InfoS("verbose detail")
	klog.Flush()
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1 (V(4) is debug): %q", len(lines), buf.String())
	}
	var line map[string]any
	if err := json.Unmarshal(lines[0], &line); err != nil {
		t.Fatalf("klog line %q is not JSON: %v", lines[0], err)
	}
	if line["lock"] != "ops/etcd-operator" || line["msg"] != "Successfully acquired lease" {
		t.Errorf("klog line = %v", line)
	}
}
