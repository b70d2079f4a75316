package member

import (
	"slices"
	"testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
)

// A pod built for a client port on its way on or off TLS serves plaintext and TLS on the same
// port (ClientDual): etcd listens on both schemes of 2379, advertises https, has the client
// port's certificates and demands a client certificate (on TLS connections alone), and the
// kubelet probes the plaintext metrics port. member-init dials what the operator dialled the
// cluster with when it made the pod (DialTLS). Whatever the spec asks, Template.Client wins.
func TestPodClientDual(t *testing.T) {
	for _, specTLS := range []bool{false, true} {
		for _, dial := range []bool{false, true} {
			c := tlsCluster(true, specTLS, "3.6.16")
			tmpl := Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, Client: ClientDual, DialTLS: dial}
			p := Pod(c, tmpl, "op:1")
			etcd := p.Spec.Containers[0]
			argv := etcdArgv(etcd)
			expectArgs(t, argv, map[string]string{
				"--listen-client-urls":    "http://0.0.0.0:2379,https://0.0.0.0:2379",
				"--advertise-client-urls": "https://demo-2.prod.svc:2379",
			})
			checkClientTLSArgs(t, argv, true)
			checkTLSVolume(t, p, true)
			checkProbes(t, etcd, true, "3.6.16")
			o, err := memberinit.Parse(etcd.Args[1:])
			if err != nil {
				t.Fatalf("member-init refuses the pod's arguments: %v", err)
			}
			s := scheme(dial)
			if !slices.Equal(o.Endpoints, []string{s + "://demo-0.prod.svc:2379", s + "://demo-1.prod.svc:2379"}) || o.TLS.IsZero() == dial {
				t.Errorf("spec TLS %v, dial TLS %v: member-init dials %v with %+v", specTLS, dial, o.Endpoints, o.TLS)
			}
			back, ok := ReadTemplate(c.Name, p)
			if !ok || back.Client != ClientDual || back.DialTLS != dial {
				t.Errorf("ReadTemplate = client %q dial %v, want %q %v", back.Client, back.DialTLS, ClientDual, dial)
			}
			if !UpToDate(c, p, Target{Version: "3.6.16", Client: ClientDual}, "op:1") {
				t.Error("a pod just built is out of date for its own mode")
			}
			for _, other := range []ClientMode{ClientPlain, ClientSecure, ""} {
				if UpToDate(c, p, Target{Version: "3.6.16", Client: other}, "op:1") {
					t.Errorf("a pod serving both is up to date for %q", other)
				}
			}
		}
	}
}

// The mode a pod serves reads back from it, whatever the spec says now: a pod built by the
// spec before the client port moved keeps its mode, and is out of date for the spec's.
func TestClientModeReadsBack(t *testing.T) {
	operatorIssued := func(client bool) *api.EtcdCluster {
		c := tlsCluster(true, false, "3.7.3")
		if client {
			c.Spec.TLS.Client = &api.TLSSource{}
		}
		return c
	}
	for _, mode := range []ClientMode{ClientPlain, ClientDual, ClientSecure} {
		built := Pod(operatorIssued(mode == ClientSecure), Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}, Client: mode}, "op:1")
		for _, specTLS := range []bool{false, true} {
			c := operatorIssued(specTLS)
			back, _ := ReadTemplate(c.Name, built)
			if back.Client != mode {
				t.Errorf("mode %q read back as %q", mode, back.Client)
			}
			if got, want := UpToDate(c, built, Target{Version: "3.7.3"}, "op:1"), mode == SpecClientMode(c); got != want {
				t.Errorf("mode %q under spec TLS %v: up to date %v, want %v", mode, specTLS, got, want)
			}
		}
	}
}

// etcd (the 3.6 the tests embed) reads the dual listener as one address served both ways.
func TestEtcdAcceptsClientDual(t *testing.T) {
	c := tlsCluster(true, false, "3.6.16")
	argv := etcdArgv(Pod(c, Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}, Client: ClientDual}, "op:1").Spec.Containers[0])
	cfg, fs := parseEtcdFlags(t, argv)
	urls := fs.Lookup("listen-client-urls").Value.String()
	if urls != "http://0.0.0.0:2379,https://0.0.0.0:2379" || !cfg.ClientTLSInfo.ClientCertAuth || cfg.ClientTLSInfo.CertFile == "" {
		t.Errorf("etcd reads client URLs %s, client TLS %+v", urls, cfg.ClientTLSInfo)
	}
}

// Every member pod says, in LabelMetricsPort, which of its etcd container's ports serves
// etcd's metrics in plaintext, from the mode the pod itself serves (whatever the spec asks
// now): the client port in plaintext, the metrics port once the client port takes TLS. The
// pod declares that port.
func TestMetricsPortLabel(t *testing.T) {
	for _, tc := range []struct {
		mode    ClientMode
		specTLS bool
		want    string
	}{
		{"", false, "client"},
		{"", true, "metrics"},
		{ClientPlain, true, "client"},
		{ClientDual, false, "metrics"},
		{ClientDual, true, "metrics"},
		{ClientSecure, false, "metrics"},
	} {
		c := tlsCluster(true, tc.specTLS, "3.6.16")
		p := Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}, Client: tc.mode}, "op:1")
		if got := p.Labels[LabelMetricsPort]; got != tc.want {
			t.Errorf("mode %q, spec client TLS %v: %s=%q, want %q", tc.mode, tc.specTLS, LabelMetricsPort, got, tc.want)
		}
		declared := false
		for _, port := range p.Spec.Containers[0].Ports {
			declared = declared || port.Name == tc.want
		}
		if !declared {
			t.Errorf("mode %q: the etcd container declares no port %q: %+v", tc.mode, tc.want, p.Spec.Containers[0].Ports)
		}
		if patch := MetadataPatchFor(c, p); !patch.Empty() {
			t.Errorf("mode %q: a pod just built needs a patch: %+v", tc.mode, patch)
		}
	}
}
