//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestPodInputs: what spec.pod and spec.storage ask for reaches the member pods as the
// operator's policy says: a tuning variable passes, the security context is merged over the
// restricted default, the etcd container requests resources, the backend quota follows the
// emptyDir's sizeLimit, and spec.networkPolicy is kept as a NetworkPolicy that goes when it is
// unset. (The local node enforces no NetworkPolicy: its effect is not shown here.)
func TestPodInputs(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "inputs"
	f.Apply(fmt.Sprintf(`apiVersion: etcd.operator.dev/v1alpha1
kind: EtcdCluster
metadata:
  name: %s
spec:
  size: 1
  storage: {emptyDir: {sizeLimit: 1Gi}}
  networkPolicy:
    clients:
      - podSelector: {matchLabels: {app: api}}
  pod:
    env:
      - {name: ETCD_SNAPSHOT_COUNT, value: "5000"}
    securityContext: {fsGroup: 2000}
`, name))
	f.WaitClusterInSpec(name, 1, 3*time.Minute)

	var pod corev1.Pod
	if err := f.GetJSON("pod/"+name+"-0", &pod); err != nil {
		t.Fatal(err)
	}
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil || *sc.FSGroup != 2000 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil {
		t.Errorf("securityContext %+v: want fsGroup 2000 merged over runAsNonRoot and RuntimeDefault", sc)
	}
	etcd := pod.Spec.Containers[0]
	if etcd.Resources.Requests.Cpu().IsZero() || etcd.Resources.Requests.Memory().IsZero() {
		t.Errorf("etcd container requests %v, want the defaults", etcd.Resources.Requests)
	}
	// 1Gi, less 384Mi for the WAL, halved: 320Mi.
	if args := strings.Join(etcd.Args, " "); !strings.Contains(args, "--quota-backend-bytes=335544320") {
		t.Errorf("etcd's command line %q lacks the quota of a 1Gi emptyDir", args)
	}
	var snap bool
	for _, e := range etcd.Env {
		snap = snap || e.Name == "ETCD_SNAPSHOT_COUNT"
	}
	if !snap {
		t.Errorf("env %v lacks ETCD_SNAPSHOT_COUNT", etcd.Env)
	}

	var np networkingv1.NetworkPolicy
	f.Eventually("the cluster's NetworkPolicy", time.Minute, func() (bool, error) {
		err := f.GetJSON("networkpolicy/"+name, &np)
		return err == nil, err
	})
	if len(np.OwnerReferences) != 1 || np.OwnerReferences[0].Name != name || len(np.Spec.Ingress) != 3 {
		t.Errorf("network policy owners %v, ingress %+v: want the cluster's, members, clients and the operator on the peer port", np.OwnerReferences, np.Spec.Ingress)
	}
	f.Patch("etcdcluster/"+name, `{"spec":{"networkPolicy":null}}`)
	f.Eventually("the NetworkPolicy deleted once unset", time.Minute, func() (bool, error) {
		out, err := f.NS("get", "networkpolicy", "-o", "name")
		return err == nil && strings.TrimSpace(out) == "", fmt.Errorf("policies %q, %v", out, err)
	})
}
