package operator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestAPIRequestsCounted: a request of a client built as the operator builds its clients is
// counted on the operator's /metrics, by status code, method and API server host, and the
// series carries no other label.
func TestAPIRequestsCounted(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer api.Close()
	u, err := url.Parse(api.URL)
	if err != nil {
		t.Fatal(err)
	}
	reg := newOperatorRegistry()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		_, err := kube.CoreV1().Pods("db").Get(context.Background(), "demo-0", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("get: %v, want NotFound", err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got float64
	for _, f := range families {
		if f.GetName() != "rest_client_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["host"] != u.Host {
				continue
			}
			if len(labels) != 3 || labels["code"] != "404" || labels["method"] != "GET" {
				t.Errorf("series %v, want code 404, method GET, host %s and no other label", labels, u.Host)
			}
			got += m.GetCounter().GetValue()
		}
	}
	if got != 2 {
		t.Errorf("rest_client_requests_total for host %s = %v, want 2", u.Host, got)
	}
}
