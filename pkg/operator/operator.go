package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/clustermetrics"
	"github.com/etcd-operator/etcd-operator/pkg/controller"
	"github.com/etcd-operator/etcd-operator/pkg/crd"
	"github.com/etcd-operator/etcd-operator/pkg/dnsutil"
	versioned "github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
)

// Client-side rate limits for the API server: client-go's 5 QPS would starve passes of many
// clusters; these still leave the API server's priority and fairness in charge.
const (
	clientQPS   = 50
	clientBurst = 100
	// componentName is the operator's name in Events, the user agent and the Lease.
	componentName = "etcd-operator"
	// healthServerStopTimeout bounds the wait for in-flight scrapes at exit.
	healthServerStopTimeout = 5 * time.Second
	// watchdogTimeout is how long past a missed renewal /healthz still reports a leader as
	// healthy; past it the kubelet restarts a replica whose leader election is stuck.
	watchdogTimeout = 20 * time.Second
)

// clients are the API clients the operator uses.
type clients struct {
	// kube is the client of the Kubernetes APIs; etcdClusters of the operator's own API
	// (EtcdClusters); extension of CustomResourceDefinitions.
	kube         kubernetes.Interface
	etcdClusters versioned.Interface
	extension    apiextensionsclientset.Interface
}

// Run runs the operator until ctx is done (SIGTERM) or the leader Lease is lost. In order:
// clients, the metrics and health server, leader election, and while leading the CRDs (unless
// skipped), the informers and the controller. It returns nil after a clean shutdown.
func Run(ctx context.Context, o *Options, log *logrus.Logger) error {
	start := time.Now()
	entry := logrus.NewEntry(log)
	RouteKlog(entry)
	TuneMemory(entry)
	o.logBounds(entry)
	cl, err := newClients(o.Kubeconfig)
	if err != nil {
		return err
	}
	return runWith(ctx, o, cl, entry, start)
}

// runWith is Run past the clients: the health server, leader election, and while leading the
// CRDs, the informers and the controller.
func runWith(ctx context.Context, o *Options, cl *clients, entry *logrus.Entry, start time.Time) error {

	reg := newOperatorRegistry()
	metrics, err := newMetrics(reg)
	if err != nil {
		return err
	}
	var (
		ready    readiness
		watchdog *leaderelection.HealthzAdaptor
		healthz  check = func(*http.Request) error { return nil }
	)
	if o.LeaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(watchdogTimeout)
		healthz = watchdog.Check
	}
	httpLog := entry.WithField("component", "http")
	servers := []served{
		{o.MetricsAddr, "metrics", metricsHandler(reg, httpLog)},
		{o.HealthAddr, "health", healthHandler(healthz, ready.check)},
	}
	if o.ProfilingAddr != "" {
		servers = append(servers, served{o.ProfilingAddr, "profiles", profilingHandler()})
	}
	for _, srv := range servers {
		server, err := startServer(srv.addr, srv.h, srv.what, httpLog)
		if err != nil {
			return err
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healthServerStopTimeout)
			defer cancel()
			if err := server.Shutdown(stopCtx); err != nil {
				entry.WithError(err).WithField("serving", srv.what).Warn("Stopping a server failed")
			}
		}()
	}

	run := leading(o, cl, metrics, &ready, entry, start)
	if !o.LeaderElect {
		entry.Warn("Leader election disabled: run a single replica only")
		return run(ctx)
	}
	return electedRun(ctx, o, cl.kube, watchdog, entry.WithField("component", "leader-election"), run)
}

// newOperatorRegistry is the registry /metrics serves, with the Go runtime's and the
// process's collectors and the API clients' request counts; the controller adds its own
// metrics. Besides the default Go metrics it exports go_gc_heap_live_bytes, what the last
// collection found reachable: the heap in use also counts garbage the collector has not
// reached yet, so only the live heap tells a leak from the collector's pace.
func newOperatorRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	goMetrics := collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: liveHeapMetric})
	reg.MustRegister(collectors.NewGoCollector(goMetrics), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerClientMetrics(reg)
	return reg
}

// liveHeapMetric picks the Go runtime's /gc/heap/live:bytes, exported as go_gc_heap_live_bytes.
var liveHeapMetric = regexp.MustCompile(`^/gc/heap/live:bytes$`)

// leading is what a replica does once it leads (or, without leader election, at once): it
// installs the CRDs and the admission policy, then runs the controller. A replica reports
// itself not ready until its caches have synced.
func leading(o *Options, cl *clients, metrics *metrics, ready *readiness, log *logrus.Entry, start time.Time) func(context.Context) error {
	return func(ctx context.Context) error {
		ready.leading(func() bool { return false })
		if err := installCRDs(ctx, o, cl, crds, log, start); err != nil {
			return err
		}
		if err := installPolicy(ctx, o, cl, tlsDefaultPolicy, log); err != nil {
			return err
		}
		return runController(ctx, o, cl, metrics, ready, log)
	}
}

// installCRDs creates or updates each CRD of defs (YAML) in turn, each established before the
// next, unless an admin installs them. Only the leader runs it, once elected: replicas that
// stand by write nothing, and crd.Ensure never writes an older schema over a newer one, so
// two operator versions never flap a CRD.
func installCRDs(ctx context.Context, o *Options, cl *clients, defs [][]byte, log *logrus.Entry, start time.Time) error {
	if o.SkipCRDInstall {
		log.Info("Skipping CRD installation (--skip-crd-install)")
		return nil
	}
	for _, def := range defs {
		if err := crd.Ensure(ctx, cl.extension, def, log.WithField("component", "crd")); err != nil {
			return fmt.Errorf("installing the operator's CRDs: %w", err)
		}
	}
	log.WithFields(sinceStart(start)).WithField("crds", len(defs)).Info("CRDs established")
	return nil
}

// installPolicy creates or updates the admission policy of policy (YAML) and its binding,
// unless an admin installs them with the CRDs. An API server that does not serve such
// policies (Kubernetes before 1.36) is no reason to stop: clusters then get no default
// spec.tls, which the warning says once per start.
func installPolicy(ctx context.Context, o *Options, cl *clients, policy []byte, log *logrus.Entry) error {
	if o.SkipCRDInstall {
		return nil
	}
	err := crd.EnsurePolicy(ctx, cl.kube, policy, log.WithField("component", "crd"))
	if errors.Is(err, crd.ErrPolicyNotServed) {
		log.WithError(err).Warn("No admission policy: EtcdClusters created without spec.tls get plaintext peers")
		return nil
	}
	if err != nil {
		return fmt.Errorf("installing the operator's admission policy: %w", err)
	}
	return nil
}

// newClients builds the API clients from kubeconfig, or from the pod's service account when
// kubeconfig is empty.
func newClients(kubeconfig string) (*clients, error) {
	var (
		cfg *rest.Config
		err error
	)
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("loading the API server configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg = rest.AddUserAgent(cfg, componentName)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	etcd, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the EtcdCluster client: %w", err)
	}
	ext, err := apiextensionsclientset.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the apiextensions client: %w", err)
	}
	return &clients{kube: kube, etcdClusters: etcd, extension: ext}, nil
}

// runController starts the informers and runs the controller until ctx is done. The
// informers keep running until the controller has returned, so the passes that finish during
// shutdown still read fresh caches. While it runs, the per-cluster metrics read its caches and
// its cluster loops' counters; a replica that stops leading exports no cluster.
func runController(ctx context.Context, o *Options, cl *clients, metrics *metrics, ready *readiness, log *logrus.Entry) error {
	informers := controller.NewInformers(cl.kube, cl.etcdClusters, o.Namespace, o.ResyncPeriod)

	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), api.AddToScheme(scheme)); err != nil {
		return fmt.Errorf("building the event scheme: %w", err)
	}
	broadcaster := newEventBroadcaster()
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cl.kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: componentName})

	counters := clustermetrics.NewCounters()
	etcdInformers := informers.Etcd().Etcd().V1alpha1()
	metrics.clusters.SetSource(&clustermetrics.Source{Clusters: etcdInformers.EtcdClusters().Lister(),
		Backups: etcdInformers.EtcdBackups().Lister(), Schedules: etcdInformers.EtcdBackupSchedules().Lister(), Counters: counters})
	defer metrics.clusters.SetSource(nil)
	ctrl, err := controller.New(controller.Config{
		Kinds: []controller.Kind{
			clusterKind(informers, newClusterReconciler(o, cl, informers, recorder, counters, log)),
			backupKind(informers, newBackupReconciler(o, cl, informers, recorder, log)),
			scheduleKind(informers, newScheduleReconciler(cl, informers, recorder, log)),
		},
		Metrics:       metrics.controller,
		Log:           log.WithField("component", "controller"),
		Workers:       o.Workers,
		ShutdownGrace: o.ShutdownGrace,
	})
	if err != nil {
		return fmt.Errorf("creating the controller: %w", err)
	}
	ready.leading(ctrl.HasSynced)

	informerCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	defer informers.Shutdown()
	defer stopInformers()
	informers.Start(informerCtx)
	go dropInitPagesOnceSynced(informerCtx, ctrl.HasSynced, log)
	if err := ctrl.Run(ctx); err != nil {
		if ctx.Err() != nil && !ctrl.HasSynced() {
			// Shut down before the caches synced: nothing ran, nothing failed.
			return nil
		}
		return fmt.Errorf("running the controller: %w", err)
	}
	return nil
}

// clusterDNS asks the pod's own name servers, which are cluster DNS, whether a member's name is
// served yet. Outside the cluster (--kubeconfig) the host's resolver knows no cluster names: the
// EndpointSlices are then trusted alone.
func clusterDNS(o *Options, log *logrus.Entry) dnsutil.Checker {
	if o.Kubeconfig != "" {
		log.Info("Running outside the cluster: member names are not checked against cluster DNS before use")
		return nil
	}
	p, err := dnsutil.NewFromResolvConf(dnsutil.ResolvConf)
	if err != nil {
		log.WithError(err).Warn("Cannot ask cluster DNS: member names are not checked against it before use")
		return nil
	}
	return p
}

// installation names this installation of the operator: its leader Lease, which is unique to
// it (the cluster-wide and the namespaced installation run in different namespaces). Empty
// when leader election is off and no Lease namespace is known.
func installation(o *Options) string {
	if o.LeaseNamespace == "" {
		return ""
	}
	return o.LeaseNamespace + "/" + o.LeaseName
}
