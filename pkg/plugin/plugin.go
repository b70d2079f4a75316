// Package plugin is kubectl etcd, the kubectl plugin of the operator: the day-2 questions and
// chores of an EtcdCluster (its status, members, leadership, defragmentation, compaction,
// alarms, backups and restores) from a laptop, with the user's own kubeconfig.
//
// It reaches etcd only through the API server: a port-forward to each member pod's client
// port (pods/portforward), never a pod IP, so it works from outside the cluster's network and
// through the cluster's NetworkPolicy. With client TLS it presents the cluster's client
// certificate (the Secret status.tls.clientSecretName names) and checks the members'
// certificates against the client Service's name, as the operator does (etcdutil).
//
// Each command is a function of an Env, which tests fill with fake clientsets and a Forwarder
// that maps pods to embedded etcd members.
package plugin

import (
	"io"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/etcd-operator/etcd-operator/pkg/generated/clientset/versioned"
)

// Env is what a command works with.
type Env struct {
	// Kube reads pods and Secrets; Etcd reads and creates EtcdClusters and EtcdBackups.
	Kube kubernetes.Interface
	Etcd versioned.Interface
	// Namespace is the namespace of the objects named on the command line.
	Namespace string
	// Forwarder reaches a member pod's client port.
	Forwarder Forwarder
	// Out gets the command's output; ErrOut warnings and notes.
	Out, ErrOut io.Writer
	// Now is the clock: ages, and the names of the backups made.
	Now func() time.Time
	// DialTimeout and CallTimeout bound connecting to a member and each etcd call (but
	// defragmentation and a physical compaction, which take as long as the data takes).
	DialTimeout, CallTimeout time.Duration
}

// The timeouts of an Env by default: longer than the operator's, since every connection goes
// through the API server and the kubelet.
const (
	defaultDialTimeout = 5 * time.Second
	defaultCallTimeout = 15 * time.Second
)
