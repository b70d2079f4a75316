package member

import (
	"fmt"
	"strings"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// peerURL is the peer URL of the member with the given ordinal, as the template knows it.
func (t Template) peerURL(c *api.EtcdCluster, ordinal int) string {
	if u, ok := t.PeerURLs[ordinal]; ok {
		return u
	}
	return PeerURL(c.Name, c.Namespace, ordinal)
}

// etcdArgs are the flags of the member's etcd.
func etcdArgs(c *api.EtcdCluster, t Template) []string {
	initial := make([]string, 0, len(t.InitialCluster))
	for _, o := range t.InitialCluster {
		initial = append(initial, Name(c.Name, o)+"="+t.peerURL(c, o))
	}
	self := t.peerURL(c, t.Ordinal)
	args := []string{
		"--name=" + Name(c.Name, t.Ordinal),
		"--data-dir=" + DataDir,
		fmt.Sprintf("--listen-peer-urls=http://0.0.0.0:%d", PeerPort),
		fmt.Sprintf("--listen-client-urls=http://0.0.0.0:%d", ClientPort),
		"--advertise-client-urls=" + ClientURLOf(self),
		"--initial-advertise-peer-urls=" + self,
		initialClusterFlag + strings.Join(initial, ","),
		"--initial-cluster-state=" + string(t.ClusterState),
		"--initial-cluster-token=" + ClusterToken(c),
	}
	args = append(args, quotaArgs(&c.Spec)...)
	if t.ForceNewCluster {
		args = append(args, forceNewClusterFlag)
	}
	return args
}

// initialClusterFlag is the prefix of etcd's --initial-cluster argument, which ReadTemplate
// reads back.
const initialClusterFlag = "--initial-cluster="

// forceNewClusterFlag is etcd's flag for Template.ForceNewCluster, which ReadTemplate reads
// back.
const forceNewClusterFlag = "--force-new-cluster"
