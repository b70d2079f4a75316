package member

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/objstore"
)

// S3Source is an S3 destination as the pods that reach it are built from: comparable, so
// that a Template read back from a pod compares with the one it was built from.
type S3Source struct {
	Endpoint, Bucket, Region string
	PathStyle                bool
	// CredentialsSecret and CASecret name the Secrets (CASecret empty when none).
	CredentialsSecret, CASecret string
}

// S3SourceOf is the source of destination d.
func S3SourceOf(d *api.S3Destination) S3Source {
	s := S3Source{Endpoint: d.Endpoint, Bucket: d.Bucket, Region: d.Region, PathStyle: d.ForcePathStyle,
		CredentialsSecret: d.CredentialsSecret.Name}
	if d.CASecret != nil {
		s.CASecret = d.CASecret.Name
	}
	return s
}

// IsZero reports whether s names no store.
func (s S3Source) IsZero() bool { return s == S3Source{} }

// Where a pod that reaches an S3 store mounts its Secrets: the credentials' two keys as
// files, and the CA.
const (
	S3CredentialsVolume = "s3-credentials"
	S3CredentialsDir    = "/etc/etcd-s3/credentials"
	S3CAVolume          = "s3-ca"
	S3CADir             = "/etc/etcd-s3/ca"
)

// s3SecretMode lets the pod's fsGroup, which its user is in, read the credentials, and no
// other user of the node.
const s3SecretMode int32 = 0o440

// S3Access is how a container reaches s: the flags of the binary (objstore.Config), the
// pod's volumes of the Secrets, and the container's read-only mounts of them. Only the
// credentials Secret's two keys are projected; a Secret without them does not start the
// container, which the operator reports.
func S3Access(s S3Source) (objstore.Config, []corev1.Volume, []corev1.VolumeMount) {
	cfg := objstore.Config{Endpoint: s.Endpoint, Bucket: s.Bucket, Region: s.Region, PathStyle: s.PathStyle,
		CredentialsDir: S3CredentialsDir}
	vols := []corev1.Volume{{Name: S3CredentialsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: s.CredentialsSecret, DefaultMode: ptr.To(s3SecretMode),
		Items: []corev1.KeyToPath{
			{Key: api.S3AccessKeyIDKey, Path: objstore.AccessKeyIDFile},
			{Key: api.S3SecretAccessKeyKey, Path: objstore.SecretAccessKeyFile},
		}}}}}
	mounts := []corev1.VolumeMount{{Name: S3CredentialsVolume, MountPath: S3CredentialsDir, ReadOnly: true}}
	if s.CASecret != "" {
		cfg.CAFile = S3CADir + "/" + api.S3CAKey
		vols = append(vols, corev1.Volume{Name: S3CAVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: s.CASecret, DefaultMode: ptr.To(s3SecretMode),
			Items: []corev1.KeyToPath{{Key: api.S3CAKey, Path: api.S3CAKey}}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: S3CAVolume, MountPath: S3CADir, ReadOnly: true})
	}
	return cfg, vols, mounts
}

// readS3Source reads back the source of a pod built with S3Access, from its volumes and the
// container's flags cfg.
func readS3Source(p *corev1.Pod, cfg objstore.Config) S3Source {
	s := S3Source{Endpoint: cfg.Endpoint, Bucket: cfg.Bucket, Region: cfg.Region, PathStyle: cfg.PathStyle}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret == nil:
		case v.Name == S3CredentialsVolume:
			s.CredentialsSecret = v.Secret.SecretName
		case v.Name == S3CAVolume:
			s.CASecret = v.Secret.SecretName
		}
	}
	return s
}

// S3SecretsProblem says what is missing of d's Secrets, read with get (nil and no error when
// there is no such Secret); empty when nothing is. A pod whose Secret volume cannot be
// mounted waits without a word in its container statuses: the operator checks first.
func S3SecretsProblem(d *api.S3Destination, namespace string, get func(name string) (*corev1.Secret, error)) string {
	check := func(name string, keys ...string) string {
		s, err := get(name)
		switch {
		case err != nil:
			return fmt.Sprintf("reading Secret %s: %v", name, err)
		case s == nil:
			return fmt.Sprintf("Secret %s does not exist in namespace %s", name, namespace)
		}
		for _, k := range keys {
			if len(s.Data[k]) == 0 {
				return fmt.Sprintf("Secret %s has no key %s", name, k)
			}
		}
		return ""
	}
	if p := check(d.CredentialsSecret.Name, api.S3AccessKeyIDKey, api.S3SecretAccessKeyKey); p != "" {
		return p
	}
	if d.CASecret != nil {
		return check(d.CASecret.Name, api.S3CAKey)
	}
	return ""
}
