package deploy_test

import (
	"flag"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/deploy"
	"github.com/etcd-operator/etcd-operator/pkg/operator"
)

// notChartValues are the operator's flags the chart sets from elsewhere, or leaves to their
// defaults on purpose: the downward API gives the pod's name and namespace, and the image is
// the chart's own.
var notChartValues = []string{"kubeconfig", "leader-elect-identity", "leader-elect-namespace", "member-init-image"}

// TestChartValuesSetTheOperatorsFlags renders the chart with a value for each of the
// operator's flags that the chart takes, all different from the defaults, and parses the
// rendered args as the operator does: it accepts them, each lands in its option, and every
// flag of the operator is set but those notChartValues names (a new flag fails the test
// until the chart takes it or the list names it). The ports follow the addresses.
func TestChartValuesSetTheOperatorsFlags(t *testing.T) {
	c := deploy.ChartContainer(t, "etcd",
		"namespaced=true",
		"bounds.podStuckAfter=11s", "bounds.rolloutStuckAfter=3m", "bounds.noQuorumAfter=20s",
		"bounds.clusterTakeoverAfter=7m", "bounds.tlsMinLifetime=10m", "bounds.idleCheckInterval=45s",
		"bounds.clientCAOverlap=40s",
		"profilingAddr=127.0.0.1:6060",
		"leaderElection.leaseName=other", "leaderElection.leaseDuration=20s",
		"leaderElection.renewDeadline=12s", "leaderElection.retryPeriod=3s",
		"metrics.port=9090", "health.port=9091", "logLevel=debug", "logFormat=json",
		"workers=4", "resyncPeriod=7m", "shutdownGrace=30s")
	t.Setenv(operator.EnvPodNamespace, "etcd")
	t.Setenv(operator.EnvPodName, "etcd-operator-0")
	t.Setenv(operator.EnvOperatorImage, "etcd-operator:dev")
	var o operator.Options
	fs := flag.NewFlagSet("etcd-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if err := fs.Parse(c.Args); err != nil {
		t.Fatalf("the operator refuses the chart's args %q: %v", c.Args, err)
	}
	if err := o.Complete(); err != nil {
		t.Fatalf("the operator refuses the chart's args %q: %v", c.Args, err)
	}
	for name, got := range map[string]any{
		"pod-stuck-after": o.Bounds.StuckAfter, "rollout-stuck-after": o.Bounds.Comeback,
		"no-quorum-after": o.Bounds.Election, "cluster-takeover-after": o.TakeoverAfter,
		"tls-min-lifetime": o.TLSMinLifetime, "leader-elect-lease-duration": o.LeaseDuration,
		"leader-elect-renew-deadline": o.RenewDeadline, "leader-elect-retry-period": o.RetryPeriod,
		"resync-period": o.ResyncPeriod, "shutdown-grace": o.ShutdownGrace, "idle-check-interval": o.IdleCheck,
		"client-ca-overlap": o.ClientCAOverlap,
	} {
		want := map[string]time.Duration{
			"pod-stuck-after": 11 * time.Second, "rollout-stuck-after": 3 * time.Minute,
			"no-quorum-after": 20 * time.Second, "cluster-takeover-after": 7 * time.Minute,
			"tls-min-lifetime": 10 * time.Minute, "leader-elect-lease-duration": 20 * time.Second,
			"leader-elect-renew-deadline": 12 * time.Second, "leader-elect-retry-period": 3 * time.Second,
			"resync-period": 7 * time.Minute, "shutdown-grace": 30 * time.Second, "idle-check-interval": 45 * time.Second,
			"client-ca-overlap": 40 * time.Second,
		}[name]
		if got != want {
			t.Errorf("--%s = %v, want %v", name, got, want)
		}
	}
	// The kubelet expands $(POD_NAMESPACE) from the container's env: the downward API's namespace.
	var nsFromPod bool
	for _, e := range c.Env {
		nsFromPod = nsFromPod || e.Name == operator.EnvPodNamespace && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
	}
	if o.Namespace != "$("+operator.EnvPodNamespace+")" || !nsFromPod {
		t.Errorf("--namespace=%s, want the pod's namespace, $(%s) from the downward API (%v)", o.Namespace, operator.EnvPodNamespace, nsFromPod)
	}
	if !o.SkipCRDInstall || !o.LeaderElect || o.LeaseName != "other" ||
		o.MetricsAddr != ":9090" || o.HealthAddr != ":9091" || o.LogLevel != "debug" || o.LogFormat != "json" || o.Workers != 4 ||
		o.ProfilingAddr != "127.0.0.1:6060" {
		t.Errorf("options %+v do not have the values set", o)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	fs.VisitAll(func(f *flag.Flag) {
		if !set[f.Name] && !slices.Contains(notChartValues, f.Name) {
			t.Errorf("no value of the chart sets --%s", f.Name)
		}
	})
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["metrics"] != 9090 || ports["health"] != 9091 {
		t.Errorf("container ports %v, want metrics 9090 and health 9091", ports)
	}
}

// valuesDefault matches a comment of values.yaml that quotes a flag's default.
var valuesDefault = regexp.MustCompile(`--([a-z-]+)[: ].*\(default ([0-9a-z]+)`)

// TestChartValuesQuoteTheOperatorsDefaults: where values.yaml says what a flag's default is,
// it is the operator's.
func TestChartValuesQuoteTheOperatorsDefaults(t *testing.T) {
	b, err := os.ReadFile("../charts/etcd-operator/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var o operator.Options
	fs := flag.NewFlagSet("etcd-operator", flag.ContinueOnError)
	o.AddFlags(fs)
	matches := valuesDefault.FindAllStringSubmatch(string(b), -1)
	if len(matches) < 5 {
		t.Fatalf("values.yaml quotes %d defaults, want at least the five bounds'", len(matches))
	}
	for _, m := range matches {
		f := fs.Lookup(m[1])
		if f == nil {
			t.Errorf("values.yaml names --%s, which the operator does not have", m[1])
			continue
		}
		if !sameValue(f.DefValue, m[2]) {
			t.Errorf("values.yaml says --%s defaults to %s, the operator's default is %s", m[1], m[2], f.DefValue)
		}
	}
}

// sameValue compares a flag's default with a quoted one, as durations or numbers where they
// are ("2m" is "2m0s"), else as text.
func sameValue(def, quoted string) bool {
	if d1, err := time.ParseDuration(def); err == nil {
		d2, err := time.ParseDuration(quoted)
		return err == nil && d1 == d2
	}
	if n1, err := strconv.Atoi(def); err == nil {
		n2, err := strconv.Atoi(quoted)
		return err == nil && n1 == n2
	}
	return def == quoted
}
