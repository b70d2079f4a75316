package status

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// newCluster is the EtcdCluster demo in ns, of the given size, at generation 1.
func newCluster(size int32) *api.EtcdCluster {
	return &api.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "uid-1", Generation: 1},
		Spec: api.EtcdClusterSpec{Size: size, Version: api.DefaultVersion, Repository: api.DefaultRepository,
			Storage: member.LegacyStorage()},
	}
}
