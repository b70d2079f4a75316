package cluster

import (
	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// etcdConn is how the operator connects to the members of c: in plaintext, as every cluster
// is served today. Each client the operator opens to a cluster's members takes its settings
// from here, so a cluster served over TLS changes this one place.
func etcdConn(_ *api.EtcdCluster) etcdutil.ConnConfig {
	return etcdutil.ConnConfig{}
}
