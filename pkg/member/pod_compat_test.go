package member

import (
	"testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// A cluster without spec.tls (every cluster made before TLS) builds exactly the pods it did
// before: a new operator must not roll every member of every running cluster. The hashes were
// recorded from the operator before TLS; a change here rolls every such cluster on upgrade.
func TestPodWithoutTLSUnchanged(t *testing.T) {
	onClaims := testCluster()
	onClaims.Spec.Version = "3.7.3"
	onClaims.Spec.Storage = DefaultStorage()
	headless := map[int]string{0: "http://demo-0.demo.prod.svc:2380"}
	for _, tc := range []struct {
		name string
		c    *api.EtcdCluster
		t    Template
		want string
	}{
		{"joining, 3.6, emptyDir", testCluster(),
			Template{Ordinal: 2, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}}, "648b82b7cbd4a336"},
		{"seed restored from a snapshot, 3.5", func() *api.EtcdCluster { c := testCluster(); c.Spec.Version = "3.5.21"; return c }(),
			Template{Ordinal: 0, ClusterState: etcdutil.ClusterStateNew, InitialCluster: []int{0},
				Restore: &Restore{ClaimName: "backups", Key: "demo/demo-b-7.db", BumpRevision: 1000, MarkCompacted: true}}, "10cea7c923cd1c94"},
		{"restarted in place, 3.7, claims, a member on its headless name", onClaims,
			Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2},
				MemberID: 0x8e9e05c52164694d, PeerURLs: headless}, "785e28126ff87be0"},
	} {
		if got := RecordedHash(Pod(tc.c, tc.t, "op:1")); got != tc.want {
			t.Errorf("%s: template hash %s, want %s as before TLS", tc.name, got, tc.want)
		}
	}
}
