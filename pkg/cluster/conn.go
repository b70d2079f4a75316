package cluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// conns says how the operator connects to the members of a cluster: in plaintext, or, when
// the members' client ports serve TLS (dialTLS), with the client certificate the cluster keeps in
// <name>-client-tls, verifying the members by the client Service's name (the operator dials
// pod IPs, which no certificate names). Each client the operator opens to a cluster's members
// takes its settings from here.
type conns struct {
	secrets corelisters.SecretLister
	kube    kubernetes.Interface
}

// errNoClientCertificate: the cluster's client certificate is not there yet (tls.go makes
// it), so its members cannot be asked anything.
var errNoClientCertificate = errors.New("the cluster's client certificate is not issued yet")

// For is how to connect to c's members: over TLS (secure) when their pods serve it, as the
// pass found (dialTLS), and with the scheme of the URLs it dials them at
// (member.PodClientURL).
func (s conns) For(ctx context.Context, c *api.EtcdCluster, secure bool) (etcdutil.ConnConfig, error) {
	if !secure {
		return etcdutil.ConnConfig{}, nil
	}
	name := member.ClientTLSSecretName(c.Name)
	sec, err := lookupSecret(ctx, s.secrets, s.kube, c.Namespace, name)
	if err != nil {
		return etcdutil.ConnConfig{}, err
	}
	if sec == nil || !metav1.IsControlledBy(sec, c) {
		return etcdutil.ConnConfig{}, errNoClientCertificate
	}
	conn, err := etcdutil.PEMConnConfig(sec.Data[caKey], sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey], member.ClientServiceHost(c))
	if err != nil {
		return etcdutil.ConnConfig{}, fmt.Errorf("secret %s: %w", name, err)
	}
	return conn, nil
}

// lookupSecret reads a Secret the operator keeps from the cache, and from the API server when
// the cache has not seen it yet (one made a moment ago); nil when there is none.
func lookupSecret(ctx context.Context, lister corelisters.SecretLister, kube kubernetes.Interface, namespace, name string) (*corev1.Secret, error) {
	if lister != nil {
		s, err := lister.Secrets(namespace).Get(name)
		if err == nil {
			return s, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	s, err := kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting secret %s: %w", name, err)
	}
	return s, nil
}

// secret is one of the cluster's Secrets, as lookupSecret reads it.
func (r *Reconciler) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return lookupSecret(ctx, r.deps.Secrets, r.deps.KubeClient, namespace, name)
}
