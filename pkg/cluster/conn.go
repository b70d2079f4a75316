package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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

// connection is how to connect to a cluster's members, as For found it.
type connection struct {
	// id names the settings: the scheme and, over TLS, a digest of the client Secret's
	// certificate, key and CA and of the name the members are checked against. Two
	// connections with the same id connect the same way: a client opened with one serves the
	// other (etcdClients), and a renewed certificate is a new id.
	id string
	// config builds the settings; it parses the certificates, so it is called only when a
	// client is opened.
	config func() (etcdutil.ConnConfig, error)
}

// For is how to connect to c's members: over TLS (secure) when their pods serve it, as the
// pass found (dialTLS), and with the scheme of the URLs it dials them at
// (member.PodClientURL).
func (s conns) For(ctx context.Context, c *api.EtcdCluster, secure bool) (connection, error) {
	if !secure {
		return connection{id: "http", config: func() (etcdutil.ConnConfig, error) { return etcdutil.ConnConfig{}, nil }}, nil
	}
	name := member.ClientTLSSecretName(c.Name)
	sec, err := lookupSecret(ctx, s.secrets, s.kube, c.Namespace, name)
	if err != nil {
		return connection{}, err
	}
	if sec == nil || !metav1.IsControlledBy(sec, c) {
		return connection{}, errNoClientCertificate
	}
	ca, cert, key, server := sec.Data[caKey], sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey], member.ClientServiceHost(c)
	digest := sha256.New()
	for _, part := range [][]byte{ca, cert, key, []byte(server)} {
		// Each part's length first: no two different parts read the same.
		_ = binary.Write(digest, binary.BigEndian, uint64(len(part)))
		digest.Write(part)
	}
	return connection{id: "https " + hex.EncodeToString(digest.Sum(nil)), config: func() (etcdutil.ConnConfig, error) {
		conn, err := etcdutil.PEMConnConfig(ca, cert, key, server)
		if err != nil {
			return etcdutil.ConnConfig{}, fmt.Errorf("secret %s: %w", name, err)
		}
		return conn, nil
	}}, nil
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
