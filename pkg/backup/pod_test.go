package backup

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// A backup of a cluster whose client port uses TLS dials the voting members' https client
// URLs with the cluster's client Secret, mounted read-only and readable by the pod's group
// alone; a backup of any other cluster mounts no Secret and dials http, peer TLS or not.
func TestAttemptPodTLS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    *api.TLSSpec
		scheme string
	}{
		{"no spec.tls", nil, "http"},
		{"peer TLS only", &api.TLSSpec{Peer: &api.TLSSource{}}, "http"},
		{"client TLS", &api.TLSSpec{Client: &api.TLSSource{}}, "https"},
		{"client TLS from a user's Secret", &api.TLSSpec{Peer: &api.TLSSource{}, Client: &api.TLSSource{SecretName: "mine"}}, "https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster()
			c.Spec.TLS = tc.tls
			p := AttemptPod(newBackup(api.BackupRetain), c, 1, "op:dev")
			ctr := p.Spec.Containers[0]
			a, err := snapshot.Parse(ctr.Args)
			if err != nil {
				t.Fatalf("the backup command refuses the pod's arguments: %v", err)
			}
			want := []snapshot.Endpoint{{Name: "example-0", URL: tc.scheme + "://example-0.ns.svc:2379"},
				{Name: "example-1", URL: tc.scheme + "://example-1.ns.svc:2379"}}
			if !slices.Equal(a.Members, want) {
				t.Errorf("members %v, want %v", a.Members, want)
			}
			i := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil })
			j := slices.IndexFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == clientTLSVolume })
			if tc.scheme == "http" {
				if !a.TLS.IsZero() || i >= 0 || j >= 0 {
					t.Errorf("TLS files %+v, volumes %v, mounts %v: want none", a.TLS, p.Spec.Volumes, ctr.VolumeMounts)
				}
				return
			}
			if i < 0 || j < 0 {
				t.Fatalf("volumes %v, mounts %v: want the client Secret mounted", p.Spec.Volumes, ctr.VolumeMounts)
			}
			s, m := p.Spec.Volumes[i], ctr.VolumeMounts[j]
			if s.Name != m.Name || s.Secret.SecretName != "example-client-tls" || s.Secret.DefaultMode == nil || *s.Secret.DefaultMode != 0o440 ||
				!m.ReadOnly || m.SubPath != "" || p.Spec.SecurityContext.FSGroup == nil {
				t.Errorf("volume %+v mounted %+v: want Secret example-client-tls, 0440 to the pod's fsGroup, read-only", s, m)
			}
			dir := m.MountPath + "/"
			if want := (etcdutil.TLSFiles{CertFile: dir + "tls.crt", KeyFile: dir + "tls.key", CAFile: dir + "ca.crt"}); a.TLS != want {
				t.Errorf("TLS files %+v, want %+v", a.TLS, want)
			}
		})
	}
}
