package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// ErrNotFound: the EtcdCluster (or EtcdBackup) named does not exist in the namespace.
var ErrNotFound = errors.New("not found")

// getCluster reads the EtcdCluster name of the Env's namespace.
func getCluster(ctx context.Context, env *Env, name string) (*api.EtcdCluster, error) {
	c, err := env.Etcd.EtcdV1alpha1().EtcdClusters(env.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("etcdcluster %q %w in namespace %q", name, ErrNotFound, env.Namespace)
	case err != nil:
		return nil, fmt.Errorf("getting etcdcluster %q: %w", name, err)
	}
	return c, nil
}

// memberPods are the cluster's member pods, by ordinal: the pods of its labels whose names are
// its members' names.
func memberPods(ctx context.Context, env *Env, c *api.EtcdCluster) ([]*corev1.Pod, error) {
	list, err := env.Kube.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: member.ClusterSelector(c.Name).String()})
	if err != nil {
		return nil, fmt.Errorf("listing the member pods of %s: %w", c.Name, err)
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		if _, ok := member.Ordinal(c.Name, list.Items[i].Name); ok {
			pods = append(pods, &list.Items[i])
		}
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return byOrdinal(c.Name, a.Name, b.Name) })
	return pods, nil
}

// byOrdinal orders member names by ordinal (example-2 before example-10), names of no ordinal
// last.
func byOrdinal(cluster, a, b string) int {
	oa, okA := member.Ordinal(cluster, a)
	ob, okB := member.Ordinal(cluster, b)
	switch {
	case okA && okB:
		return oa - ob
	case okA:
		return -1
	case okB:
		return 1
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// podState is a pod's state as kubectl's STATUS column says it: Terminating, the etcd
// container's waiting reason (ContainerCreating, CrashLoopBackOff, ...), an init container's
// (Init:...), or the phase, with "not ready" for a running pod that is not.
func podState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	for _, s := range p.Status.InitContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			return "Init:" + w.Reason
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name != member.EtcdContainerName {
			continue
		}
		if w := s.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason
		}
		if p.Status.Phase == corev1.PodRunning && !s.Ready {
			return "Running, not ready"
		}
	}
	if p.Status.Phase == "" {
		return string(corev1.PodPending)
	}
	return string(p.Status.Phase)
}

// notServing says why etcd cannot be running in the pod (nil when it may be): a pod not
// running, or an etcd container that is not.
func notServing(p *corev1.Pod) error {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("pod %s is %s", p.Name, podState(p))
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == member.EtcdContainerName && s.State.Running == nil {
			return fmt.Errorf("pod %s is %s", p.Name, podState(p))
		}
	}
	return nil
}

// clientConn is how to connect to the cluster's members: plaintext, or with client TLS the
// certificate of the cluster's client Secret (status.tls.clientSecretName, <name>-client-tls
// by default), the members checked against the client Service's name. An error names the
// Secret and what is wrong, never its contents.
func clientConn(ctx context.Context, env *Env, c *api.EtcdCluster) (etcdutil.ConnConfig, error) {
	if !member.ClientTLS(c) {
		return etcdutil.ConnConfig{}, nil
	}
	name := member.ClientTLSSecretName(c.Name)
	if c.Status.TLS != nil && c.Status.TLS.ClientSecretName != "" {
		name = c.Status.TLS.ClientSecretName
	}
	sec, err := env.Kube.CoreV1().Secrets(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return etcdutil.ConnConfig{}, fmt.Errorf("the cluster's client certificate: secret %q not found (the operator makes it once the cluster has client TLS)", name)
	case apierrors.IsForbidden(err):
		return etcdutil.ConnConfig{}, fmt.Errorf("the cluster's client certificate: reading secret %q is forbidden to you (kubectl etcd needs get on secrets): %w", name, err)
	case err != nil:
		return etcdutil.ConnConfig{}, fmt.Errorf("the cluster's client certificate: getting secret %q: %w", name, err)
	}
	conn, err := etcdutil.PEMConnConfig(sec.Data[member.KeyCA], sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey], member.ClientServiceHost(c))
	if err != nil {
		return etcdutil.ConnConfig{}, fmt.Errorf("the cluster's client certificate: secret %q: %w", name, err)
	}
	return conn, nil
}

// quota is the backend quota of the cluster's members: the one the operator sets from the
// spec's storage, or etcd's own default.
func quota(c *api.EtcdCluster) int64 {
	if q, ok := member.QuotaBackendBytes(&c.Spec); ok {
		return q
	}
	return member.EtcdDefaultQuota
}
