package v1alpha1

// BackupDestination is where a snapshot is kept. Exactly one destination is given.
// +kubebuilder:validation:XValidation:rule="(has(self.volume) ? 1 : 0) + (has(self.s3) ? 1 : 0) == 1",message="destination takes exactly one of: volume, s3"
type BackupDestination struct {
	// Volume is a PersistentVolumeClaim of the backup's namespace.
	// +optional
	Volume *VolumeDestination `json:"volume,omitempty"`
	// S3 is a bucket of an S3-compatible object store.
	// +optional
	S3 *S3Destination `json:"s3,omitempty"`
}

// VolumeDestination is a folder of a PersistentVolumeClaim.
type VolumeDestination struct {
	// ClaimName is the PersistentVolumeClaim, in the backup's namespace, that holds the
	// snapshots. It must exist; it is mounted read-write by the backup's pod only, and
	// read-only by the seed of a cluster restored from it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName"`
	// Path is the folder inside the claim, relative to its root, created when missing: for
	// example "example/". Empty means the claim's root.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="path must be relative to the claim's root and must not contain '..'"
	// +optional
	Path string `json:"path,omitempty"`
}

// S3Destination is a bucket of an S3-compatible object store (AWS S3, MinIO, Ceph RGW,
// versitygw, ...). The snapshot of backup <backup> of cluster <cluster> in namespace <ns> is
// the object <prefix>/<ns>/<cluster>-<backup>.db, next to <that key>.sha256, which holds its
// SHA-256 once it is verified. Only the pod that takes the snapshot, the pod that deletes
// it and the restored seed's download step mount the credentials.
type S3Destination struct {
	// Endpoint is the store's URL: https://host[:port] or http://host[:port], without a
	// path. For AWS: https://s3.<region>.amazonaws.com.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="endpoint must be a URL with a host, http:// or https://"
	// +kubebuilder:validation:XValidation:rule="!isURL(self) || (url(self).getEscapedPath() in ['', '/'] && url(self).getQuery().size() == 0)",message="endpoint must have no path and no query: the bucket goes in bucket, the folder in prefix"
	Endpoint string `json:"endpoint"`
	// Bucket is the bucket's name. It must exist: the operator does not create it.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('..') && !self.matches('^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$')",message="bucket must be a bucket name: lower-case letters, digits, '.' and '-', no '..', not an IP address"
	Bucket string `json:"bucket"`
	// Prefix is the folder of the bucket the snapshots go in, for example "etcd/". Empty
	// means the bucket's root.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="prefix must be relative to the bucket's root and must not contain '..'"
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// Region is the bucket's region (us-east-1, eu-west-3, ...). Empty: asked of the store,
	// which most stores other than AWS answer with us-east-1.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]*$`
	// +optional
	Region string `json:"region,omitempty"`
	// ForcePathStyle addresses the bucket as <endpoint>/<bucket> rather than
	// <bucket>.<endpoint> (virtual-hosted style). Most stores other than AWS need it, and
	// any whose endpoint is a Kubernetes Service name.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
	// CredentialsSecret is a Secret of the backup's (or the restored cluster's) namespace
	// with the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	CredentialsSecret SecretReference `json:"credentialsSecret"`
	// CASecret, when set, is a Secret of the same namespace whose key ca.crt holds the PEM
	// certificates an https endpoint's certificate is verified by, instead of the public
	// certificate authorities.
	// +optional
	CASecret *SecretReference `json:"caSecret,omitempty"`
}

// SecretReference names a Secret of the object's namespace.
type SecretReference struct {
	// Name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// The keys of an S3 destination's Secrets.
const (
	// S3AccessKeyIDKey is the key of the access key ID in credentialsSecret.
	S3AccessKeyIDKey = "AWS_ACCESS_KEY_ID"
	// S3SecretAccessKeyKey is the key of the secret access key in credentialsSecret.
	S3SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
	// S3CAKey is the key of the CA certificates in caSecret.
	S3CAKey = "ca.crt"
)
