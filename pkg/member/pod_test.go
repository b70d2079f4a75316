package member

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/memberinit"
)

func testCluster() *api.EtcdCluster {
	return &api.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "prod", UID: "u1"},
		Spec: api.EtcdClusterSpec{
			Size: 3, Version: "3.6.16", Repository: api.DefaultRepository,
			Pod: &api.PodPolicy{
				Labels: map[string]string{"team": "a", LabelCluster: "spoofed"},
				Env: []corev1.EnvVar{
					{Name: "ETCD_SNAPSHOT_COUNT", Value: "5000"},
					{Name: "ETCD_INITIAL_CLUSTER", Value: "evil=http://x:2380"},
				},
				NodeSelector: map[string]string{"disk": "ssd"},
			},
		},
	}
}

func argValue(args []string, flag string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

// expectArgs checks the values etcd's flags have in args.
func expectArgs(t *testing.T, args []string, want map[string]string) {
	t.Helper()
	for flag, w := range want {
		if got, _ := argValue(args, flag); got != w {
			t.Errorf("etcd %s = %q, want %q", flag, got, w)
		}
	}
}

func TestPodJoining(t *testing.T) {
	c := testCluster()
	p := Pod(c, Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}}, "op:1")

	if p.Name != "demo-2" || p.Spec.Hostname != "demo-2" || p.Spec.Subdomain != "demo" {
		t.Errorf("identity: name %s hostname %s subdomain %s", p.Name, p.Spec.Hostname, p.Spec.Subdomain)
	}
	if p.Labels[LabelCluster] != "demo" || p.Labels[LabelMember] != "demo-2" || p.Labels["team"] != "a" {
		t.Errorf("labels: %v (operator labels must win over the pod policy's)", p.Labels)
	}
	if !metav1.IsControlledBy(p, c) {
		t.Errorf("not controlled by the cluster: %v", p.OwnerReferences)
	}
	etcd := p.Spec.Containers[0]
	if etcd.Image != "gcr.io/etcd-development/etcd:v3.6.16" {
		t.Errorf("image %s", etcd.Image)
	}
	// The etcd container runs member-init, which execs etcd with its flags once the member is
	// added; the real parser must accept the command.
	if !slices.Equal(etcd.Command, []string{MemberInitPath}) {
		t.Fatalf("etcd container command %v, want member-init from %s", etcd.Command, MemberInitPath)
	}
	if len(etcd.Args) == 0 || etcd.Args[0] != MemberInitCommand {
		t.Fatalf("etcd container args %v, want member-init first", etcd.Args)
	}
	o, err := memberinit.Parse(etcd.Args[1:])
	if err != nil {
		t.Fatalf("member-init refuses the pod's arguments: %v", err)
	}
	if o.ClusterState != etcdutil.ClusterStateExisting || o.PeerURL != "http://demo-2.prod.svc:2380" || o.DataDir != DataDir {
		t.Errorf("member-init options %+v", o)
	}
	if !slices.Equal(o.Endpoints, []string{"http://demo-0.prod.svc:2379", "http://demo-1.prod.svc:2379"}) {
		t.Errorf("member-init endpoints %v: the joining member asks the others, never itself", o.Endpoints)
	}
	if o.LivenessAddr != ":2379" || o.LivenessPath != etcd.LivenessProbe.HTTPGet.Path {
		t.Errorf("member-init answers liveness on %s%s, the probe asks :%d%s", o.LivenessAddr, o.LivenessPath,
			etcd.LivenessProbe.HTTPGet.Port.IntVal, etcd.LivenessProbe.HTTPGet.Path)
	}
	if len(o.Exec) == 0 || o.Exec[0] != EtcdBinary {
		t.Fatalf("member-init execs %v, want etcd", o.Exec)
	}
	expectArgs(t, o.Exec[1:], map[string]string{
		"--name":                        "demo-2",
		"--initial-cluster-state":       "existing",
		"--initial-advertise-peer-urls": "http://demo-2.prod.svc:2380",
		"--advertise-client-urls":       "http://demo-2.prod.svc:2379",
		"--initial-cluster":             "demo-0=http://demo-0.prod.svc:2380,demo-1=http://demo-1.prod.svc:2380,demo-2=http://demo-2.prod.svc:2380",
		"--initial-cluster-token":       "demo-u1",
	})
	var env []string
	for _, e := range etcd.Env {
		env = append(env, e.Name)
	}
	if !slices.Equal(env, []string{"ETCD_SNAPSHOT_COUNT"}) {
		t.Errorf("env %v: user variables that shadow the operator's flags must be dropped", env)
	}

	// The binary reaches the etcd container through a volume an init container fills.
	if len(p.Spec.InitContainers) != 1 {
		t.Fatalf("init containers %v, want the installer only", p.Spec.InitContainers)
	}
	install := p.Spec.InitContainers[0]
	if install.Name != InstallContainerName || install.Image != "op:1" ||
		!slices.Equal(install.Args, []string{InstallCommand, "--to=" + MemberInitPath}) {
		t.Errorf("install container %s %s %v", install.Name, install.Image, install.Args)
	}
	mounted := func(c corev1.Container) (corev1.VolumeMount, bool) {
		for _, m := range c.VolumeMounts {
			if m.MountPath == MemberInitDir {
				return m, true
			}
		}
		return corev1.VolumeMount{}, false
	}
	in, ok1 := mounted(install)
	out, ok2 := mounted(etcd)
	if !ok1 || !ok2 || in.Name != out.Name || in.ReadOnly || !out.ReadOnly {
		t.Errorf("member-init volume: install mounts %+v, etcd mounts %+v; want the same volume, read-only for etcd", in, out)
	}
	if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == in.Name && v.EmptyDir != nil }) {
		t.Errorf("no emptyDir volume %q in %v", in.Name, p.Spec.Volumes)
	}
	if p.Spec.NodeSelector["disk"] != "ssd" || p.Spec.Volumes[0].EmptyDir == nil {
		t.Errorf("pod policy / volume not applied: %v %v", p.Spec.NodeSelector, p.Spec.Volumes)
	}
	if sc := p.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil {
		t.Errorf("default pod security context %+v must pass the restricted standard", sc)
	}
	if sc := etcd.SecurityContext; sc == nil || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 {
		t.Errorf("etcd container security context %+v", sc)
	}
	if etcd.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %s, want /readyz for 3.6", etcd.ReadinessProbe.HTTPGet.Path)
	}
}

// Members prefer nodes of their own, unless the pod policy says otherwise.
func TestPodAntiAffinity(t *testing.T) {
	c := testCluster()
	p := Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{1}}, "op:1")
	anti := p.Spec.Affinity.PodAntiAffinity
	if anti == nil || len(anti.PreferredDuringSchedulingIgnoredDuringExecution) != 1 || len(anti.RequiredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Fatalf("default anti-affinity %+v, want one preference", anti)
	}
	term := anti.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil || !sel.Matches(labels.Set(p.Labels)) || term.TopologyKey != corev1.LabelHostname {
		t.Errorf("anti-affinity term %+v must select the cluster's member pods per node", term)
	}
	other := Pod(&api.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: c.Spec}, Template{Ordinal: 1,
		ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{1}}, "op:1")
	if sel.Matches(labels.Set(other.Labels)) {
		t.Error("anti-affinity must not keep members of other clusters apart")
	}

	// The policy's node affinity is kept beside the default; its own anti-affinity replaces it.
	c.Spec.Pod.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	if a := Pod(c, Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, "x").Spec.Affinity; a.NodeAffinity == nil || a.PodAntiAffinity == nil {
		t.Errorf("affinity %+v, want the policy's node affinity and the default anti-affinity", a)
	}
	own := &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}}
	c.Spec.Pod.Affinity = &corev1.Affinity{PodAntiAffinity: own}
	if a := Pod(c, Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, "x").Spec.Affinity; len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 0 ||
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != "zone" {
		t.Errorf("anti-affinity %+v, want the policy's own", a.PodAntiAffinity)
	}
	if c.Spec.Pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution != nil {
		t.Error("the spec was modified")
	}
}

func TestPodSeedAndOldVersion(t *testing.T) {
	c := testCluster()
	c.Spec.Version = "v3.5.21"
	p := Pod(c, Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}}, "op:1")
	etcd := p.Spec.Containers[0]
	if etcd.Image != "gcr.io/etcd-development/etcd:v3.5.21" {
		t.Errorf("image %s: a leading v in spec.version must not double", etcd.Image)
	}
	argv := etcdArgv(etcd)
	if got, _ := argValue(argv, "--initial-cluster"); got != "demo-0=http://demo-0.prod.svc:2380" {
		t.Errorf("seed --initial-cluster = %q", got)
	}
	// The seed runs member-init too, which refuses to bootstrap again on an empty data dir
	// once the member is known to have started.
	if !slices.Equal(etcd.Command, []string{MemberInitPath}) || argv[0] != EtcdBinary {
		t.Errorf("the seed runs %v %v, want member-init then etcd", etcd.Command, etcd.Args)
	}
	if got, _ := argValue(etcd.Args, "--initial-cluster-state"); got != "new" {
		t.Errorf("seed member-init --initial-cluster-state = %q", got)
	}
	if got, _ := argValue(argv, "--initial-cluster-state"); got != "new" {
		t.Errorf("seed --initial-cluster-state = %q", got)
	}
	pinned := Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1},
		Version: "3.6.16"}, "op:1")
	if img := pinned.Spec.Containers[0].Image; img != "gcr.io/etcd-development/etcd:v3.6.16" {
		t.Errorf("a member pinned to the running version got image %s", img)
	}
	if etcd.ReadinessProbe.HTTPGet.Path != "/health" {
		t.Errorf("readiness probe %s, want /health before 3.6", etcd.ReadinessProbe.HTTPGet.Path)
	}
}

// What Pod writes, ReadTemplate reads back: the planner decides from it.
func TestTemplateRoundTrip(t *testing.T) {
	c := testCluster()
	for name, tmpl := range map[string]Template{
		"seed":                   {Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}, Version: "3.6.16"},
		"joining":                {Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, Version: "3.6.16"},
		"replacing a low member": {Ordinal: 0, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2, 3, 10}, Version: "3.5.21"},
		"restarting in place":    {Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, Version: "3.6.16", MemberID: 0x8e9e05c52164694d},
		"survivor forcing a new cluster": {Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, Version: "3.6.16",
			MemberID: 0x8e9e05c52164694d, ForceNewCluster: true},
		"seed restored from a snapshot": {Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}, Version: "3.6.16",
			Restore: &Restore{ClaimName: "backups", Key: "example/example-b-42.db", BumpRevision: 1000, MarkCompacted: true}},
		"seed restored from S3": {Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}, Version: "3.6.16",
			Restore: &Restore{Key: "etcd/ns/example-b.db", SHA256: strings.Repeat("ab", 32), BumpRevision: 1000, MarkCompacted: true,
				S3: S3Source{Endpoint: "https://s3.example.com", Bucket: "backups", Region: "eu-west-3", PathStyle: true,
					CredentialsSecret: "s3-credentials", CASecret: "s3-ca"}}},
		"seed restored from an S3 key alone": {Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0}, Version: "3.6.16",
			Restore: &Restore{Key: "k.db", S3: S3Source{Endpoint: "http://s3.example.com", Bucket: "backups", CredentialsSecret: "s3-credentials"}}},
		"joining, two learners at once": {Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, Version: "3.7.3",
			MaxLearners: 2},
		"trusting two peer CAs": {Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, Version: "3.6.16",
			MemberID: 0xab, Trust: "peer-ca.crt=00aa,11bb"},
	} {
		got, ok := ReadTemplate(c.Name, Pod(c, tmpl, "op:1"))
		if (got.Restore == nil) != (tmpl.Restore == nil) || (got.Restore != nil && *got.Restore != *tmpl.Restore) {
			t.Errorf("%s: restore read back %+v, want %+v", name, got.Restore, tmpl.Restore)
		}
		if !ok || got.Ordinal != tmpl.Ordinal || got.ClusterState != tmpl.ClusterState ||
			!slices.Equal(got.InitialCluster, tmpl.InitialCluster) || got.Version != tmpl.Version || got.MemberID != tmpl.MemberID ||
			got.ForceNewCluster != tmpl.ForceNewCluster || got.MaxLearners != tmpl.MaxLearners || got.Trust != tmpl.Trust {
			t.Errorf("%s: ReadTemplate(Pod(%+v)) = %+v, %v", name, tmpl, got, ok)
		}
	}
	// The flag reaches etcd itself, after member-init's `--`, and only when asked for.
	forced := Pod(c, Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2},
		MemberID: 7, ForceNewCluster: true}, "op:1")
	if argv := etcdArgv(forced.Spec.Containers[0]); argv[0] != EtcdBinary || !slices.Contains(argv, "--force-new-cluster") {
		t.Errorf("etcd's command line of a survivor forcing a new cluster: %v", argv)
	}
	plain := Pod(c, Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}}, "op:1")
	if argv := etcdArgv(plain.Spec.Containers[0]); slices.Contains(argv, "--force-new-cluster") {
		t.Errorf("--force-new-cluster on a member that was not asked to: %v", argv)
	}
	// The restore reaches only a new cluster's seed, read-only.
	seed := Pod(c, Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0},
		Restore: &Restore{ClaimName: "backups", Key: "k.db"}}, "op:1")
	if i := slices.IndexFunc(seed.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == RestoreVolumeName }); i < 0 ||
		!seed.Spec.Volumes[i].PersistentVolumeClaim.ReadOnly ||
		!slices.Contains(seed.Spec.Containers[0].Args, "--restore-from="+RestoreDir+"/k.db") {
		t.Errorf("seed restored from a snapshot: volumes %v, args %v", seed.Spec.Volumes, seed.Spec.Containers[0].Args)
	}
	// From S3, an init container downloads the snapshot: it alone mounts the credentials,
	// and sees the data volume read-only; etcd's container sees the download read-only.
	s3 := S3Source{Endpoint: "http://s3.example.com", Bucket: "backups", CredentialsSecret: "s3-credentials"}
	fromS3 := Pod(c, Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0},
		Restore: &Restore{Key: "k.db", S3: s3}}, "op:1")
	inits := fromS3.Spec.InitContainers
	if len(inits) != 2 || inits[1].Name != FetchContainerName || inits[1].Image != "op:1" {
		t.Fatalf("init containers of a seed restored from S3: %+v", inits)
	}
	for _, ctr := range append(slices.Clone(inits), fromS3.Spec.Containers...) {
		for _, m := range ctr.VolumeMounts {
			if m.Name == S3CredentialsVolume && ctr.Name != FetchContainerName {
				t.Errorf("container %s mounts the S3 credentials", ctr.Name)
			}
			if (m.Name == DataVolumeName || m.Name == RestoreVolumeName) && ctr.Name == FetchContainerName && m.ReadOnly != (m.Name == DataVolumeName) {
				t.Errorf("fetch container's mount %+v", m)
			}
			if m.Name == RestoreVolumeName && ctr.Name == EtcdContainerName && !m.ReadOnly {
				t.Errorf("etcd's container mounts the download read-write")
			}
		}
	}
	if !slices.Contains(fromS3.Spec.Containers[0].Args, "--restore-from="+RestoreDir+"/"+RestoreS3File) {
		t.Errorf("member-init restores from %v", fromS3.Spec.Containers[0].Args)
	}
	joining := Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1},
		Restore: &Restore{Key: "k.db", S3: s3}}, "op:1")
	if len(joining.Spec.InitContainers) != 1 {
		t.Errorf("a joining member fetches a snapshot: %+v", joining.Spec.InitContainers)
	}
	joining = Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1},
		Restore: &Restore{ClaimName: "backups", Key: "k.db"}}, "op:1")
	if r := readRestore(joining); r != nil {
		t.Errorf("a joining member restores %+v", r)
	}
	// A pod built without a version runs spec.version, and reads back as such.
	if got, _ := ReadTemplate(c.Name, Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting,
		InitialCluster: []int{0, 1}}, "op:1")); got.Version != "3.6.16" {
		t.Errorf("version read back %q, want spec.version 3.6.16", got.Version)
	}
	// The planner compares initial clusters as sorted lists, whatever order a pod lists them in.
	if got, _ := ReadTemplate(c.Name, Pod(c, Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting,
		InitialCluster: []int{2, 10, 0}}, "op:1")); !slices.Equal(got.InitialCluster, []int{0, 2, 10}) {
		t.Errorf("initial cluster read back as %v, want it sorted", got.InitialCluster)
	}
	other := Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{1}}, "op:1")
	other.Name = "demo-client"
	if _, ok := ReadTemplate(c.Name, other); ok {
		t.Error("a pod whose name is not a member's read as a member pod")
	}
	// A pod of an earlier operator version, whose joining member waited in an init container:
	// its etcd container runs etcd directly.
	old := Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}}, "op:1")
	etcd := &old.Spec.Containers[0]
	o, err := memberinit.Parse(etcd.Args[1:])
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	etcd.Command, etcd.Args = o.Exec[:1], o.Exec[1:]
	if got, _ := ReadTemplate(c.Name, old); !slices.Equal(got.InitialCluster, []int{0, 1}) {
		t.Errorf("initial cluster of an earlier version's pod read back as %v", got.InitialCluster)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		member string
		ord    int
		ok     bool
	}{
		{"demo-0", 0, true}, {"demo-12", 12, true}, {"demo-01", 0, false}, {"demo-", 0, false},
		{"demo-x", 0, false}, {"other-1", 0, false}, {"demo-client", 0, false}, {"demo--1", 0, false},
	} {
		ord, ok := Ordinal("demo", tc.member)
		if ok != tc.ok || ord != tc.ord {
			t.Errorf("Ordinal(%q) = %d %v, want %d %v", tc.member, ord, ok, tc.ord, tc.ok)
		}
	}
	if n, ok := NameFromPeerURL(PeerURL(at("demo", "ns"), 4)); !ok || n != "demo-4" {
		t.Errorf("NameFromPeerURL = %q %v", n, ok)
	}
	if _, ok := NameFromPeerURL("10.0.0.1:2380"); ok {
		t.Error("a URL without scheme must not parse")
	}
	if got := PodClientURL("fd00::5", ClientTLS(at("demo", "ns"))); got != "http://[fd00::5]:2379" {
		t.Errorf("PodClientURL v6 = %s", got)
	}
}

func TestServices(t *testing.T) {
	c := testCluster()
	peer, client := PeerService(c), ClientService(c)
	if peer.Name != "demo" || peer.Spec.ClusterIP != corev1.ClusterIPNone || !peer.Spec.PublishNotReadyAddresses {
		t.Errorf("peer service %s clusterIP %q publishNotReady %v", peer.Name, peer.Spec.ClusterIP, peer.Spec.PublishNotReadyAddresses)
	}
	if client.Name != "demo-client" || client.Spec.PublishNotReadyAddresses {
		t.Errorf("client service %s must route to ready members only", client.Name)
	}
	if !ClusterSelector("demo").Matches(labels.Set(peer.Spec.Selector)) {
		t.Errorf("selector %v does not match the cluster selector", peer.Spec.Selector)
	}
}

// A pod names each member at the peer URL etcd lists for it: members added before the member
// Services stay on their headless name, and a pod of such a member is made exactly as it was
// before, so that it reads back the same and is not rolled for it.
func TestPodOfMembersOnHeadlessNames(t *testing.T) {
	c := testCluster()
	headless := map[int]string{}
	for o := range 3 {
		headless[o] = HeadlessPeerURL(c, o)
	}
	// Every member on its headless name: the flags the operator gave such a pod before.
	old := Pod(c, Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, PeerURLs: headless}, "op:1")
	opts, err := memberinit.Parse(old.Spec.Containers[0].Args[1:])
	if err != nil {
		t.Fatal(err)
	}
	expectArgs(t, opts.Exec[1:], map[string]string{
		"--initial-advertise-peer-urls": "http://demo-2.demo.prod.svc:2380",
		"--advertise-client-urls":       "http://demo-2.demo.prod.svc:2379",
		"--initial-cluster":             "demo-0=http://demo-0.demo.prod.svc:2380,demo-1=http://demo-1.demo.prod.svc:2380,demo-2=http://demo-2.demo.prod.svc:2380",
	})
	if opts.PeerURL != "http://demo-2.demo.prod.svc:2380" ||
		!slices.Equal(opts.Endpoints, []string{"http://demo-0.demo.prod.svc:2379", "http://demo-1.demo.prod.svc:2379"}) {
		t.Errorf("member-init peer URL %s endpoints %v, want the headless names", opts.PeerURL, opts.Endpoints)
	}
	back, ok := ReadTemplate(c.Name, old)
	if !ok || !maps.Equal(back.PeerURLs, headless) {
		t.Errorf("read back peer URLs %v, want %v", back.PeerURLs, headless)
	}
	if !UpToDate(c, old, Target{Version: c.Spec.Version}, "op:1") {
		t.Error("a pod of members on their headless names is out of date: it would be rolled for nothing")
	}

	// A member added now, in a cluster whose others are on their headless names.
	mixed := Pod(c, Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2},
		PeerURLs: map[int]string{0: headless[0], 1: headless[1]}}, "op:1")
	opts, err = memberinit.Parse(mixed.Spec.Containers[0].Args[1:])
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := argValue(opts.Exec[1:], "--initial-cluster"); got != "demo-0=http://demo-0.demo.prod.svc:2380,demo-1=http://demo-1.demo.prod.svc:2380,demo-2=http://demo-2.prod.svc:2380" {
		t.Errorf("--initial-cluster = %q", got)
	}
	if got, _ := argValue(opts.Exec[1:], "--advertise-client-urls"); got != "http://demo-2.prod.svc:2379" || opts.PeerURL != "http://demo-2.prod.svc:2380" {
		t.Errorf("advertised client URL %q, member-init peer URL %q: want the member's own Service", got, opts.PeerURL)
	}
	back, _ = ReadTemplate(c.Name, mixed)
	if len(back.PeerURLs) != 2 || back.PeerURLs[2] != "" {
		t.Errorf("read back peer URLs %v, want the two headless ones only", back.PeerURLs)
	}
	if !UpToDate(c, mixed, Target{Version: c.Spec.Version}, "op:1") {
		t.Error("a pod in a mixed cluster is out of date")
	}
}

func TestMemberService(t *testing.T) {
	c := testCluster()
	s := MemberService(c, 1)
	if s.Name != "demo-1" || s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.ClusterIP != "" || !s.Spec.PublishNotReadyAddresses {
		t.Errorf("member service %s type %s clusterIP %q publishNotReady %v: want a virtual IP that routes before the member is ready",
			s.Name, s.Spec.Type, s.Spec.ClusterIP, s.Spec.PublishNotReadyAddresses)
	}
	p := Pod(c, Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1}}, "op:1")
	if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(p.Labels)) {
		t.Errorf("selector %v does not select the member's pod (labels %v)", s.Spec.Selector, p.Labels)
	}
	other := Pod(c, Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}}, "op:1")
	if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(other.Labels)) {
		t.Errorf("selector %v selects another member's pod", s.Spec.Selector)
	}
	if o, ok := MemberServiceOrdinal(c.Name, s); !ok || o != 1 {
		t.Errorf("MemberServiceOrdinal = %d, %v", o, ok)
	}
	for _, other := range []*corev1.Service{PeerService(c), ClientService(c)} {
		if _, ok := MemberServiceOrdinal(c.Name, other); ok {
			t.Errorf("%s taken for a member Service", other.Name)
		}
	}
	if got := "http://" + Host(c.Name, c.Namespace, 1) + ":2380"; got != PeerURL(c, 1) {
		t.Errorf("peer URL %s is not on the member Service's name %s", PeerURL(c, 1), got)
	}
	for _, u := range []string{PeerURL(c, 1), HeadlessPeerURL(c, 1)} {
		if !IsPeerURL(c, 1, u) {
			t.Errorf("IsPeerURL(%s) = false", u)
		}
		if name, ok := NameFromPeerURL(u); !ok || name != "demo-1" {
			t.Errorf("NameFromPeerURL(%s) = %q", u, name)
		}
	}
	if IsPeerURL(c, 1, "http://demo-1.other.svc:2380") || IsPeerURL(c, 2, PeerURL(c, 1)) {
		t.Error("IsPeerURL accepts another namespace's or another member's URL")
	}
	if got := ClientURLOf(c, "http://demo-1.prod.svc:2380"); got != "http://demo-1.prod.svc:2379" {
		t.Errorf("ClientURLOf = %s", got)
	}
}
