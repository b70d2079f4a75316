// Package operator runs the etcd operator process: it builds the clients, installs the CRD,
// serves metrics and health, takes part in leader election, and while leading runs the
// controller whose per-cluster passes are pkg/cluster's Reconciler.
package operator

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/controller"
)

// Environment variables the Deployment sets through the downward API and its image.
const (
	EnvPodNamespace  = "POD_NAMESPACE"
	EnvPodName       = "POD_NAME"
	EnvOperatorImage = "OPERATOR_IMAGE"
)

// Defaults of the flags.
const (
	// DefaultResyncPeriod is a backstop, not the health check: pkg/cluster asks for a pass
	// on its own while a cluster is steady (every whenSteady, in reconciler.go), so the resync only matters for a loop
	// that asked for none. Every resync wakes every cluster at once; a long period keeps that
	// burst rare when one operator manages many clusters.
	DefaultResyncPeriod  = 5 * time.Minute
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	DefaultLeaseName     = "etcd-operator"
	DefaultMetricsAddr   = ":8080"
	DefaultHealthAddr    = ":8081"
)

// serviceAccountNamespaceFile holds the pod's namespace in every pod with a service account.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Options are the operator's command-line settings.
type Options struct {
	Kubeconfig string
	// Namespace is the one namespace watched; empty watches all.
	Namespace string

	LeaderElect    bool
	LeaseName      string
	LeaseNamespace string
	Identity       string
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration

	MetricsAddr string
	HealthAddr  string
	// ProfilingAddr serves Go's profiles (profiling.go); empty, the default, serves none.
	ProfilingAddr string
	LogLevel      string
	LogFormat     string

	ResyncPeriod    time.Duration
	Workers         int
	ShutdownGrace   time.Duration
	SkipCRDInstall  bool
	MemberInitImage string

	// Bounds are how long a cluster may be in a state before status says so and the planner
	// acts on it; TakeoverAfter is how long another installation's cluster Lease must go
	// unrenewed before this one takes the cluster over (bounds.go).
	Bounds        plan.Bounds
	TakeoverAfter time.Duration
	// TLSMinLifetime is the shortest spec.tls.leafLifetime honoured (--tls-min-lifetime).
	TLSMinLifetime time.Duration
	// ClientCAOverlap is how long a client port trusts its old CA after a CA rotation switched
	// its leaves (--client-ca-overlap).
	ClientCAOverlap time.Duration
	// IdleCheck is how often a steady cluster is looked at again (--idle-check-interval).
	IdleCheck time.Duration
}

// AddFlags binds the options to fs, with defaults taken from the environment where the
// Deployment provides them.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty uses the in-cluster service account")
	fs.StringVar(&o.Namespace, "namespace", "", "watch EtcdClusters in this namespace only; empty watches all namespaces")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "hold a Lease so that only one replica acts")
	fs.StringVar(&o.LeaseName, "leader-elect-lease-name", DefaultLeaseName, "name of the leader election Lease")
	fs.StringVar(&o.LeaseNamespace, "leader-elect-namespace", os.Getenv(EnvPodNamespace),
		"namespace of the Lease (default $"+EnvPodNamespace+", else the service account's namespace)")
	fs.StringVar(&o.Identity, "leader-elect-identity", os.Getenv(EnvPodName),
		"this replica's identity in the Lease (default $"+EnvPodName+", else the hostname)")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", DefaultLeaseDuration,
		"how long other replicas wait after the last renewal before taking the Lease over")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", DefaultRenewDeadline,
		"how long the leader keeps retrying to renew before it gives up leading and exits")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", DefaultRetryPeriod, "interval between Lease acquire and renew attempts")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", DefaultMetricsAddr, "address serving /metrics (Prometheus)")
	fs.StringVar(&o.HealthAddr, "health-addr", DefaultHealthAddr, "address serving /healthz and /readyz (the kubelet's probes)")
	fs.StringVar(&o.ProfilingAddr, "profiling-addr", "",
		"address serving Go's profiles at /debug/pprof/ (say 127.0.0.1:6060, reached with kubectl port-forward); empty serves none")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.LogFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", DefaultResyncPeriod, "how often every EtcdCluster's loop is woken without an event")
	fs.IntVar(&o.Workers, "workers", controller.DefaultWorkers,
		"workers per kind dispatching events to the objects' loops (passes of different objects run in parallel regardless)")
	fs.DurationVar(&o.ShutdownGrace, "shutdown-grace", controller.DefaultShutdownGrace,
		"how long in-flight passes may run after SIGTERM before they are cancelled")
	fs.BoolVar(&o.SkipCRDInstall, "skip-crd-install", false, "do not create or update the operator's CRDs and the admission policy that defaults spec.tls (an admin applies deploy/crd/)")
	fs.StringVar(&o.MemberInitImage, "member-init-image", os.Getenv(EnvOperatorImage),
		"the operator's own image: member pods copy member-init from it, backup pods run it (default $"+EnvOperatorImage+")")
	o.addBoundFlags(fs)
}

// Complete fills the defaults that need a lookup and validates the options.
func (o *Options) Complete() error {
	var errs []error
	if o.LeaderElect {
		if o.LeaseNamespace == "" {
			ns, err := os.ReadFile(serviceAccountNamespaceFile)
			if err != nil {
				errs = append(errs, fmt.Errorf("--leader-elect-namespace or $%s is required outside a pod: %w", EnvPodNamespace, err))
			}
			o.LeaseNamespace = strings.TrimSpace(string(ns))
		}
		if o.Identity == "" {
			host, err := os.Hostname()
			if err != nil {
				errs = append(errs, fmt.Errorf("--leader-elect-identity or $%s is required: %w", EnvPodName, err))
			}
			o.Identity = host
		}
		if o.LeaseName == "" {
			errs = append(errs, errors.New("--leader-elect-lease-name must not be empty"))
		}
		// client-go's own rules: a leader must give up before others may take over.
		if o.LeaseDuration <= o.RenewDeadline {
			errs = append(errs, errors.New("--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline"))
		}
		if o.RetryPeriod <= 0 || float64(o.RenewDeadline) <= 1.2*float64(o.RetryPeriod) {
			errs = append(errs, errors.New("--leader-elect-renew-deadline must be greater than 1.2 × --leader-elect-retry-period > 0"))
		}
	}
	if o.MemberInitImage == "" {
		errs = append(errs, fmt.Errorf("--member-init-image or $%s is required: joining member pods copy member-init from it", EnvOperatorImage))
	}
	if o.Workers <= 0 {
		errs = append(errs, errors.New("--workers must be positive"))
	}
	if o.ResyncPeriod < 0 {
		errs = append(errs, errors.New("--resync-period must not be negative (0 disables resyncs)"))
	}
	if o.ShutdownGrace <= 0 {
		errs = append(errs, errors.New("--shutdown-grace must be positive"))
	}
	if o.MetricsAddr == "" {
		errs = append(errs, errors.New("--metrics-addr must not be empty"))
	}
	if o.HealthAddr == "" {
		errs = append(errs, errors.New("--health-addr must not be empty: probes need /healthz and /readyz"))
	}
	if o.MetricsAddr != "" && o.MetricsAddr == o.HealthAddr {
		errs = append(errs, errors.New("--metrics-addr and --health-addr must differ"))
	}
	if o.ProfilingAddr != "" && (o.ProfilingAddr == o.MetricsAddr || o.ProfilingAddr == o.HealthAddr) {
		errs = append(errs, errors.New("--profiling-addr must differ from --metrics-addr and --health-addr"))
	}
	errs = append(errs, o.boundErrors()...)
	return errors.Join(errs...)
}
