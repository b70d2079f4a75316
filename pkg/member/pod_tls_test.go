package member

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
)

// tlsCluster is testCluster at version with TLS on the ports asked for.
func tlsCluster(peer, client bool, version string) *api.EtcdCluster {
	c := testCluster()
	c.Spec.Version = version
	c.Spec.TLS = &api.TLSSpec{}
	if peer {
		c.Spec.TLS.Peer = &api.TLSSource{}
	}
	if client {
		c.Spec.TLS.Client = &api.TLSSource{SecretName: "users-certificate"}
	}
	return c
}

// hasFlag reports whether args hold the boolean flag, bare or =true.
func hasFlag(args []string, flag string) bool {
	return slices.Contains(args, flag) || slices.Contains(args, flag+"=true")
}

// A member pod speaks TLS on the ports spec.tls names, with the member's own Secret mounted
// whole and read-only, and nothing of TLS on the others: peer URLs and client URLs take their
// schemes apart, probes move to the plaintext metrics port only with client TLS, member-init
// dials https with the pod's client certificate, and etcd skips the peer SAN check under the
// flag name its version knows.
func TestPodTLS(t *testing.T) {
	for _, version := range []string{"3.5.21", "3.6.16", "3.7.3"} {
		for _, ports := range []struct {
			name         string
			peer, client bool
		}{{"peer", true, false}, {"client", false, true}, {"both", true, true}, {"tls: {}", false, false}} {
			t.Run(version+" "+ports.name, func(t *testing.T) {
				c := tlsCluster(ports.peer, ports.client, version)
				tmpl := Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}}
				p := Pod(c, tmpl, "op:1")
				etcd := p.Spec.Containers[0]
				argv := etcdArgv(etcd)
				peerScheme, clientScheme := scheme(ports.peer), scheme(ports.client)
				expectArgs(t, argv, map[string]string{
					"--listen-peer-urls":            peerScheme + "://0.0.0.0:2380",
					"--initial-advertise-peer-urls": peerScheme + "://demo-2.prod.svc:2380",
					"--initial-cluster": "demo-0=" + peerScheme + "://demo-0.prod.svc:2380,demo-1=" + peerScheme +
						"://demo-1.prod.svc:2380,demo-2=" + peerScheme + "://demo-2.prod.svc:2380",
					"--listen-client-urls":    clientScheme + "://0.0.0.0:2379",
					"--advertise-client-urls": clientScheme + "://demo-2.prod.svc:2379",
				})
				checkPeerTLSArgs(t, argv, ports.peer, version)
				checkClientTLSArgs(t, argv, ports.client)
				checkTLSVolume(t, p, ports.peer || ports.client)
				checkProbes(t, etcd, ports.client, version)
				checkMemberInitTLS(t, etcd, ports.client)
				if version == "3.6.16" {
					checkEtcdAccepts(t, argv, ports.peer, ports.client)
				}

				back, ok := ReadTemplate(c.Name, p)
				if !ok || !slices.Equal(back.InitialCluster, tmpl.InitialCluster) || back.PeerURLs != nil {
					t.Errorf("ReadTemplate = %+v, %v; want initial cluster %v, every member at its PeerURL", back, ok, tmpl.InitialCluster)
				}
				if !UpToDate(c, p, Target{Version: version}, "op:1") {
					t.Error("a pod just built is out of date: it would be rolled for nothing")
				}
			})
		}
	}
}

func checkPeerTLSArgs(t *testing.T, argv []string, on bool, version string) {
	t.Helper()
	want := map[string]string{
		"--peer-cert-file":       "/etc/etcd/tls/peer.crt",
		"--peer-key-file":        "/etc/etcd/tls/peer.key",
		"--peer-trusted-ca-file": "/etc/etcd/tls/peer-ca.crt",
	}
	skip, other := "--experimental-peer-skip-client-san-verification", "--peer-skip-client-san-verification"
	if version != "3.5.21" {
		skip, other = other, skip
	}
	if !on {
		for _, a := range argv {
			if strings.HasPrefix(a, "--peer-") || strings.HasPrefix(a, "--experimental-peer-") {
				t.Errorf("peer TLS flag %s without peer TLS", a)
			}
		}
		return
	}
	expectArgs(t, argv, want)
	if !hasFlag(argv, "--peer-client-cert-auth") || !hasFlag(argv, skip) || hasFlag(argv, other) {
		t.Errorf("etcd %s flags %v: want --peer-client-cert-auth and %s (not %s)", version, argv, skip, other)
	}
}

func checkClientTLSArgs(t *testing.T, argv []string, on bool) {
	t.Helper()
	flags := []string{"--cert-file", "--key-file", "--trusted-ca-file", "--client-cert-auth", "--listen-metrics-urls"}
	if !on {
		for _, a := range argv {
			name, _, _ := strings.Cut(a, "=")
			if slices.Contains(flags, name) {
				t.Errorf("client TLS flag %s without client TLS", a)
			}
		}
		return
	}
	expectArgs(t, argv, map[string]string{
		"--cert-file":           "/etc/etcd/tls/server.crt",
		"--key-file":            "/etc/etcd/tls/server.key",
		"--trusted-ca-file":     "/etc/etcd/tls/client-ca.crt",
		"--listen-metrics-urls": "http://0.0.0.0:2381",
	})
	if !hasFlag(argv, "--client-cert-auth") {
		t.Errorf("etcd flags %v: want --client-cert-auth", argv)
	}
}

// checkTLSVolume: the member's own Secret, readable by the pod's fsGroup and no one else,
// mounted whole (a subPath mount never sees a renewed Secret) in etcd's container alone.
func checkTLSVolume(t *testing.T, p *corev1.Pod, on bool) {
	t.Helper()
	i := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == TLSVolumeName })
	var mounts []corev1.VolumeMount
	for _, ctr := range append(slices.Clone(p.Spec.Containers), p.Spec.InitContainers...) {
		for _, m := range ctr.VolumeMounts {
			if m.Name == TLSVolumeName || m.MountPath == TLSDir {
				if ctr.Name != EtcdContainerName {
					t.Errorf("container %s mounts the member's Secret", ctr.Name)
				}
				mounts = append(mounts, m)
			}
		}
	}
	if !on {
		if i >= 0 || len(mounts) > 0 {
			t.Errorf("TLS volume %v, mounts %v, without TLS", p.Spec.Volumes, mounts)
		}
		return
	}
	if i < 0 {
		t.Fatalf("no volume %s in %v", TLSVolumeName, p.Spec.Volumes)
	}
	s := p.Spec.Volumes[i].Secret
	if s == nil || s.SecretName != "demo-2-tls" || s.DefaultMode == nil || *s.DefaultMode != 0o440 || len(s.Items) != 0 ||
		(s.Optional != nil && *s.Optional) {
		t.Errorf("TLS volume %+v: want Secret demo-2-tls whole, mode 0440, not optional", p.Spec.Volumes[i])
	}
	if len(mounts) != 1 || mounts[0].MountPath != "/etc/etcd/tls" || !mounts[0].ReadOnly || mounts[0].SubPath != "" {
		t.Errorf("TLS mounts %+v: want one, read-only, whole, at /etc/etcd/tls", mounts)
	}
	if sc := p.Spec.SecurityContext; sc.FSGroup == nil {
		t.Error("no fsGroup: etcd's user could not read a Secret of mode 0440")
	}
}

// checkProbes: with client TLS the kubelet probes the plaintext metrics port, which the
// container declares; without it, the client port, as before.
func checkProbes(t *testing.T, etcd corev1.Container, clientTLS bool, version string) {
	t.Helper()
	port := ClientPort
	if clientTLS {
		port = MetricsPort
	}
	ready, live := probePaths(version)
	for _, pr := range []struct {
		probe *corev1.Probe
		path  string
	}{{etcd.ReadinessProbe, ready}, {etcd.LivenessProbe, live}} {
		g := pr.probe.HTTPGet
		if g.Port.IntVal != port || g.Path != pr.path || g.Scheme != corev1.URISchemeHTTP {
			t.Errorf("probe %s %s:%d, want http %s:%d", g.Scheme, g.Path, g.Port.IntVal, pr.path, port)
		}
	}
	declared := slices.ContainsFunc(etcd.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == MetricsPort })
	if declared != clientTLS {
		t.Errorf("container ports %v: metrics port declared %v, want %v", etcd.Ports, declared, clientTLS)
	}
}

// checkMemberInitTLS: member-init dials the other members at their https client URLs with
// the pod's client certificate and verifies them by the CA of their server certificates, and
// answers liveness where the kubelet probes.
func checkMemberInitTLS(t *testing.T, etcd corev1.Container, clientTLS bool) {
	t.Helper()
	o, err := memberinit.Parse(etcd.Args[1:])
	if err != nil {
		t.Fatalf("member-init refuses the pod's arguments: %v", err)
	}
	s := scheme(clientTLS)
	if !slices.Equal(o.Endpoints, []string{s + "://demo-0.prod.svc:2379", s + "://demo-1.prod.svc:2379"}) {
		t.Errorf("member-init endpoints %v, want %s", o.Endpoints, s)
	}
	want := etcdutil.TLSFiles{}
	if clientTLS {
		want = etcdutil.TLSFiles{CertFile: "/etc/etcd/tls/client.crt", KeyFile: "/etc/etcd/tls/client.key", CAFile: "/etc/etcd/tls/server-ca.crt"}
	}
	if o.TLS != want {
		t.Errorf("member-init TLS files %+v, want %+v", o.TLS, want)
	}
	if probe := etcd.LivenessProbe.HTTPGet; o.LivenessAddr != ":"+probe.Port.String() || o.LivenessPath != probe.Path {
		t.Errorf("member-init answers liveness on %s%s, the probe asks :%s%s", o.LivenessAddr, o.LivenessPath, probe.Port.String(), probe.Path)
	}
}

// parseEtcdFlags parses etcd's command line argv with the flags of the etcd the tests embed
// (3.6), failing the test on a flag it does not know.
func parseEtcdFlags(t *testing.T, argv []string) (*embed.Config, *flag.FlagSet) {
	t.Helper()
	cfg := embed.NewConfig()
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.AddFlags(fs)
	// etcd's main adds the one flag the embedded configuration has no field for.
	fs.String("initial-cluster-state", "", "new or existing")
	if err := fs.Parse(argv[1:]); err != nil {
		t.Fatalf("etcd 3.6 refuses the pod's flags: %v", err)
	}
	return cfg, fs
}

// checkEtcdAccepts parses etcd's command line with the flags of the etcd the tests embed
// (3.6): every flag the pod passes must exist there, with the values meant.
func checkEtcdAccepts(t *testing.T, argv []string, peer, client bool) {
	t.Helper()
	cfg, fs := parseEtcdFlags(t, argv)
	if peer != (cfg.PeerTLSInfo.CertFile == TLSDir+"/"+KeyPeerCert && cfg.PeerTLSInfo.KeyFile == TLSDir+"/"+KeyPeerKey &&
		cfg.PeerTLSInfo.TrustedCAFile == TLSDir+"/"+KeyPeerCA && cfg.PeerTLSInfo.ClientCertAuth &&
		(cfg.ExperimentalPeerSkipClientSanVerification || cfg.PeerTLSInfo.SkipClientSANVerify)) {
		t.Errorf("etcd 3.6 reads peer TLS %+v (experimental skip SAN %v), want it %v", cfg.PeerTLSInfo, cfg.ExperimentalPeerSkipClientSanVerification, peer)
	}
	if client != (cfg.ClientTLSInfo.CertFile == TLSDir+"/"+KeyServerCert && cfg.ClientTLSInfo.KeyFile == TLSDir+"/"+KeyServerKey &&
		cfg.ClientTLSInfo.TrustedCAFile == TLSDir+"/"+KeyClientCA && cfg.ClientTLSInfo.ClientCertAuth &&
		fs.Lookup("listen-metrics-urls").Value.String() == "http://0.0.0.0:2381") {
		t.Errorf("etcd 3.6 reads client TLS %+v, metrics %s; want it %v", cfg.ClientTLSInfo, fs.Lookup("listen-metrics-urls").Value, client)
	}
}

// Pods of a TLS cluster built from templates the planner makes read back the same, the
// joining member's and a restored seed's, and a pod whose members are at other peer URLs
// keeps them.
func TestTemplateRoundTripTLS(t *testing.T) {
	c := tlsCluster(true, true, "3.7.3")
	for name, tmpl := range map[string]Template{
		"seed":                {Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}, Version: "3.7.3"},
		"replacing":           {Ordinal: 0, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2, 10}, Version: "3.6.16"},
		"restarting in place": {Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, Version: "3.7.3", MemberID: 0xab, ForceNewCluster: true},
		"restored seed": {Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}, Version: "3.7.3",
			Restore: &Restore{ClaimName: "backups", Key: "k.db", BumpRevision: 5, MarkCompacted: true}},
		"another peer URL": {Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, Version: "3.7.3",
			PeerURLs: map[int]string{0: "https://demo-0.demo.prod.svc:2380"}},
	} {
		p := Pod(c, tmpl, "op:1")
		got, ok := ReadTemplate(c.Name, p)
		if !ok || got.Ordinal != tmpl.Ordinal || got.ClusterState != tmpl.ClusterState || !slices.Equal(got.InitialCluster, tmpl.InitialCluster) ||
			got.Version != tmpl.Version || got.MemberID != tmpl.MemberID || got.ForceNewCluster != tmpl.ForceNewCluster ||
			len(got.PeerURLs) != len(tmpl.PeerURLs) || got.PeerURLs[0] != tmpl.PeerURLs[0] ||
			(got.Restore == nil) != (tmpl.Restore == nil) || (got.Restore != nil && *got.Restore != *tmpl.Restore) {
			t.Errorf("%s: ReadTemplate(Pod(%+v)) = %+v, %v", name, tmpl, got, ok)
		}
		if !UpToDate(c, p, Target{Version: tmpl.Version}, "op:1") {
			t.Errorf("%s: a pod just built is out of date", name)
		}
	}
	// An http URL in an https pod is not its member's PeerURL: it is read as it is, and the
	// pod is built with it again.
	p := Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1},
		PeerURLs: map[int]string{0: "http://demo-0.prod.svc:2380"}}, "op:1")
	if got, _ := ReadTemplate(c.Name, p); got.PeerURLs[0] != "http://demo-0.prod.svc:2380" {
		t.Errorf("peer URLs read back %v, want member 0 at its http URL", got.PeerURLs)
	}
}

// Secret names, the names in certificates, and URLs: a TLS cluster's URLs are https where
// its spec says, and only there.
func TestTLSNames(t *testing.T) {
	c := tlsCluster(true, false, "3.7.3")
	if got := []string{TLSSecretName(c.Name, 3), PeerCASecretName(c.Name), ClientCASecretName(c.Name), ClientTLSSecretName(c.Name)}; !slices.Equal(got,
		[]string{"demo-3-tls", "demo-peer-ca", "demo-client-ca", "demo-client-tls"}) {
		t.Errorf("Secret names %v", got)
	}
	if got := MemberNames(c, 1); !slices.Equal(got, []string{"demo-1", "demo-1.prod", "demo-1.prod.svc", "demo-1.demo.prod.svc"}) {
		t.Errorf("MemberNames = %v", got)
	}
	if got := ClientServiceNames(c); !slices.Equal(got, []string{"demo-client", "demo-client.prod", "demo-client.prod.svc"}) {
		t.Errorf("ClientServiceNames = %v", got)
	}
	// The names certificates carry are the hosts the pods are dialled at.
	for _, u := range []string{PeerURL(c, 1), HeadlessPeerURL(c, 1), ClientURLOf(c, PeerURL(c, 1)), ClientURLOf(c, HeadlessPeerURL(c, 1))} {
		host := strings.Split(strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://"), ":")[0]
		if !slices.Contains(MemberNames(c, 1), host) {
			t.Errorf("%s is dialled at %s, which MemberNames leaves out", u, host)
		}
	}
	if host := strings.Split(strings.TrimPrefix(ServiceClientURL(c), "http://"), ":")[0]; !slices.Contains(ClientServiceNames(c), host) {
		t.Errorf("the client Service is dialled at %s, which ClientServiceNames leaves out", host)
	}

	for _, tc := range []struct {
		peer, client     bool
		wantPeer, wantCl string
	}{{false, false, "http", "http"}, {true, false, "https", "http"}, {false, true, "http", "https"}, {true, true, "https", "https"}} {
		c := tlsCluster(tc.peer, tc.client, "3.7.3")
		if got := PeerURL(c, 1); got != tc.wantPeer+"://demo-1.prod.svc:2380" {
			t.Errorf("peer %v: PeerURL = %s", tc.peer, got)
		}
		if got := HeadlessPeerURL(c, 1); got != tc.wantPeer+"://demo-1.demo.prod.svc:2380" {
			t.Errorf("peer %v: HeadlessPeerURL = %s", tc.peer, got)
		}
		if got := ClientURLOf(c, PeerURL(c, 1)); got != tc.wantCl+"://demo-1.prod.svc:2379" {
			t.Errorf("peer %v client %v: ClientURLOf = %s", tc.peer, tc.client, got)
		}
		if got := ServiceClientURL(c); got != tc.wantCl+"://demo-client.prod.svc:2379" {
			t.Errorf("client %v: ServiceClientURL = %s", tc.client, got)
		}
		if got := PodClientURL("10.0.0.7", ClientTLS(c)); got != tc.wantCl+"://10.0.0.7:2379" {
			t.Errorf("client %v: PodClientURL = %s", tc.client, got)
		}
		if !IsPeerURL(c, 1, PeerURL(c, 1)) || !IsPeerURL(c, 1, HeadlessPeerURL(c, 1)) {
			t.Errorf("peer %v: IsPeerURL refuses the member's own URLs", tc.peer)
		}
		other := "https://demo-1.prod.svc:2380"
		if tc.peer {
			other = "http://demo-1.prod.svc:2380"
		}
		if IsPeerURL(c, 1, other) {
			t.Errorf("peer %v: IsPeerURL accepts %s, in the scheme the cluster does not use", tc.peer, other)
		}
	}
}
