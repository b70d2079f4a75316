package v1alpha1_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/deploy"
	"github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// env is spec.pod.env with one variable.
func env(name string) string {
	return fmt.Sprintf("  pod:\n    env:\n    - {name: %s, value: \"1\"}\n", name)
}

const (
	operatorSet = "is set by the operator: it derives the member name, data directory, URLs, initial cluster, backend quota"
	notTunable  = "is refused: of the ETCD_ variables spec.pod.env may set only those that tune a member"
)

func TestCRDValidatesPodEnv(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"a tuning variable", env("ETCD_SNAPSHOT_COUNT"), ""},
		{"GOMAXPROCS", env("GOMAXPROCS"), ""},
		{"GOMEMLIMIT", env("GOMEMLIMIT"), ""},
		{"an etcdctl variable", env("ETCDCTL_API"), ""},
		{"lower case is not etcd's", env("etcd_force_new_cluster"), ""},
		{"from a ConfigMap", "  pod:\n    env:\n    - name: ETCD_LOG_LEVEL\n      valueFrom: {configMapKeyRef: {name: etcd, key: level}}\n", ""},
		{"force new cluster", env("ETCD_FORCE_NEW_CLUSTER"), "spec.pod.env[0]: Invalid value: ETCD_FORCE_NEW_CLUSTER " + operatorSet},
		{"backend quota", env("ETCD_QUOTA_BACKEND_BYTES"), "ETCD_QUOTA_BACKEND_BYTES " + operatorSet},
		{"initial cluster state", env("ETCD_INITIAL_CLUSTER_STATE"), "ETCD_INITIAL_CLUSTER_STATE " + operatorSet},
		{"unsafe no fsync", env("ETCD_UNSAFE_NO_FSYNC"), "spec.pod.env[0]: Invalid value: ETCD_UNSAFE_NO_FSYNC " + notTunable},
		{"strict reconfig check", env("ETCD_STRICT_RECONFIG_CHECK"), "ETCD_STRICT_RECONFIG_CHECK " + notTunable},
		{"discovery", env("ETCD_DISCOVERY"), "ETCD_DISCOVERY " + notTunable},
		{"discovery SRV", env("ETCD_DISCOVERY_SRV"), "ETCD_DISCOVERY_SRV " + notTunable},
		{"WAL dir", env("ETCD_WAL_DIR"), "ETCD_WAL_DIR " + notTunable},
		{"client TLS", env("ETCD_CLIENT_CERT_AUTH"), "ETCD_CLIENT_CERT_AUTH " + notTunable},
		{"feature gates", env("ETCD_FEATURE_GATES"), "ETCD_FEATURE_GATES " + notTunable},
		{"config file", env("ETCD_CONFIG_FILE"), "ETCD_CONFIG_FILE " + notTunable},
		{"max WALs", env("ETCD_MAX_WALS"), "ETCD_MAX_WALS " + notTunable},
		{"the second of two", "  pod:\n    env:\n    - {name: GOGC, value: \"50\"}\n    - {name: ETCD_UNSAFE_NO_FSYNC, value: \"true\"}\n",
			"spec.pod.env[1]: Invalid value: ETCD_UNSAFE_NO_FSYNC"},
		{"65 variables", "  pod:\n    env:\n" + strings.Repeat("    - {name: A, value: \"1\"}\n", 65), "spec.pod.env: Too many: 65: must have at most 64 items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := a.create(etcdCluster(tc.spec, ""))
			checkErrors(t, errs, tc.want)
		})
	}
}

// TestCRDEnvPolicyMatchesGo keeps the CEL rule and v1alpha1.EnvAllowed, which member.Pod
// applies to objects stored before the rule, in step.
func TestCRDEnvPolicyMatchesGo(t *testing.T) {
	a := newAPIServer(t)
	names := append(append([]string{"ETCD_UNSAFE_NO_FSYNC", "ETCD_PEER_AUTO_TLS", "TZ"}, v1alpha1.TunableEtcdEnv...), v1alpha1.OperatorEtcdEnv...)
	for _, name := range names {
		_, errs := a.create(etcdCluster(env(name), ""))
		if accepted := len(errs) == 0; accepted != v1alpha1.EnvAllowed(name) {
			t.Errorf("%s: the CRD accepts it: %v, EnvAllowed: %v (%v)", name, accepted, v1alpha1.EnvAllowed(name), errs.ToAggregate())
		}
	}
	for _, name := range v1alpha1.OperatorEtcdEnv {
		if _, errs := a.create(etcdCluster(env(name), "")); !strings.Contains(errs.ToAggregate().Error(), operatorSet) {
			t.Errorf("%s is refused without saying the operator sets it: %v", name, errs.ToAggregate())
		}
	}
}

func TestCRDValidatesPodSecurityContext(t *testing.T) {
	a := newAPIServer(t)
	sc := func(fields string) string { return "  pod:\n    securityContext: " + fields + "\n" }
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"fsGroup only", sc("{fsGroup: 2000}"), ""},
		{"own user and group", sc("{runAsUser: 1000, runAsGroup: 0, runAsNonRoot: true}"), ""},
		{"Localhost seccomp", sc("{seccompProfile: {type: Localhost, localhostProfile: etcd.json}}"), ""},
		{"RuntimeDefault AppArmor", sc("{appArmorProfile: {type: RuntimeDefault}}"), ""},
		{"runAsNonRoot false", sc("{runAsNonRoot: false}"), "spec.pod.securityContext: Invalid value: securityContext.runAsNonRoot cannot be false"},
		{"root", sc("{runAsUser: 0}"), "securityContext.runAsUser cannot be 0 (root)"},
		{"Unconfined seccomp", sc("{seccompProfile: {type: Unconfined}}"), "securityContext.seccompProfile cannot be Unconfined"},
		{"Unconfined AppArmor", sc("{appArmorProfile: {type: Unconfined}}"), "securityContext.appArmorProfile cannot be Unconfined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := a.create(etcdCluster(tc.spec, ""))
			checkErrors(t, errs, tc.want)
		})
	}
}

// The examples pass the rules offline too (the e2e TestCRDAcceptsExamples applies them).
func TestCRDAcceptsExamplesOffline(t *testing.T) {
	servers := map[string]*apiServer{
		"EtcdCluster":        newAPIServer(t),
		"EtcdBackup":         newAPIServerFor(t, deploy.EtcdBackupCRD, "EtcdBackup"),
		"EtcdBackupSchedule": newAPIServerFor(t, deploy.EtcdBackupScheduleCRD, "EtcdBackupSchedule"),
	}
	files, err := filepath.Glob("../../../../example/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	checked := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// One object per document; the operator's kinds are checked, the others (a claim
		// for the backups) are Kubernetes' own.
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			a, ok := servers[meta.Kind]
			if !ok {
				continue
			}
			checked[meta.Kind]++
			if _, errs := a.create(doc); len(errs) > 0 {
				t.Errorf("%s refused: %v", f, errs.ToAggregate())
			}
		}
	}
	if checked["EtcdCluster"] == 0 || checked["EtcdBackup"] == 0 || checked["EtcdBackupSchedule"] == 0 {
		t.Errorf("examples checked by kind: %v, want EtcdClusters, EtcdBackups and EtcdBackupSchedules", checked)
	}
}

func TestCRDValidatesNetworkPolicy(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"on, no clients", "  networkPolicy: {}\n", ""},
		{"pods of the namespace", "  networkPolicy: {clients: [{podSelector: {matchLabels: {app: api}}}]}\n", ""},
		{"a namespace and an ipBlock", "  networkPolicy:\n    clients:\n    - namespaceSelector: {matchLabels: {team: db}}\n    - ipBlock: {cidr: 10.0.0.0/8}\n", ""},
		{"33 clients", "  networkPolicy:\n    clients:\n" + strings.Repeat("    - podSelector: {}\n", 33), "spec.networkPolicy.clients: Too many: 33: must have at most 32 items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := a.create(etcdCluster(tc.spec, ""))
			checkErrors(t, errs, tc.want)
		})
	}
}
