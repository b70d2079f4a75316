package member

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// initialClusterTokenFlag is the prefix of etcd's --initial-cluster-token argument.
const initialClusterTokenFlag = "--initial-cluster-token="

// TokenOf is the --initial-cluster-token the pod's etcd runs with; empty when it has none.
func TokenOf(p *corev1.Pod) string {
	for _, ctr := range p.Spec.Containers {
		if ctr.Name != EtcdContainerName {
			continue
		}
		for _, a := range etcdArgv(ctr) {
			if tok, ok := strings.CutPrefix(a, initialClusterTokenFlag); ok {
				return tok
			}
		}
	}
	return ""
}

// Adoptable reports whether a member pod that no controller owns was provably made for the
// cluster c, so that c may take it back: it carries c's labels, has a member's name, and runs
// etcd with c's cluster token, which holds c's UID. A pod made for an earlier cluster of the
// same name (deleted with --cascade=orphan and applied again) has another UID in its token
// and is not adoptable: its members belong to a cluster this one never recorded.
func Adoptable(c *api.EtcdCluster, p *corev1.Pod) bool {
	if metav1.GetControllerOf(p) != nil || p.DeletionTimestamp != nil {
		return false
	}
	if _, ok := Ordinal(c.Name, p.Name); !ok {
		return false
	}
	if !ClusterSelector(c.Name).Matches(labels.Set(p.Labels)) {
		return false
	}
	return c.UID != "" && TokenOf(p) == ClusterToken(c)
}
