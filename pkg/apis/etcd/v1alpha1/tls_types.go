package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// TLSSpec says how the members' peer and client ports are secured. A cluster created without
// spec.tls gets peer TLS (spec.tls.peer: {}) from the API server, by the MutatingAdmissionPolicy
// the operator installs with its CRDs; spec.tls: {} asks for plaintext peers. Which ports use
// TLS, and whose certificates, cannot change once the cluster exists.
// +kubebuilder:validation:XValidation:rule="!has(self.leafLifetime) || !has(self.caLifetime) || !self.leafLifetime.matches('^([0-9]+([.][0-9]+)?(h|m|s|ms))+$') || !self.caLifetime.matches('^([0-9]+([.][0-9]+)?(h|m|s|ms))+$') || duration(self.caLifetime).getSeconds() >= duration(self.leafLifetime).getSeconds() * 3",message="caLifetime must be at least three times leafLifetime: a CA must outlive every leaf it signs, renewals included"
type TLSSpec struct {
	// Peer, when set, secures the peer port (2380): members talk to each other over TLS and
	// must present a certificate signed by the cluster's peer CA (etcd's
	// --peer-client-cert-auth), so no pod can join the raft group by reaching the port.
	// {} has the operator issue the certificates from a CA of its own for this cluster.
	// +optional
	Peer *TLSSource `json:"peer,omitempty"`

	// Client, when set, secures the client port (2379): clients must present a certificate
	// signed by the cluster's client CA (etcd's --client-cert-auth). With {} the operator
	// issues the certificates and keeps one for applications in the Secret <name>-client-tls
	// (ca.crt, tls.crt, tls.key); status.tls.clientSecretName names it.
	// +optional
	Client *TLSSource `json:"client,omitempty"`

	// LeafLifetime is how long the certificates the operator issues to members and clients
	// are valid; they are renewed at two thirds of it, without restarting members. Default
	// 2160h (90 days); at least 1h (the operator's --tls-min-lifetime, lowered only in tests)
	// and at most 8760h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(h|m|s|ms))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(h|m|s|ms))+$') || duration(self) <= duration('8760h')",message="leafLifetime must be at most 8760h (one year)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(h|m|s|ms))+$') || duration(self) >= duration('5m')",message="leafLifetime must be at least 5m (a leaf is renewed at two thirds of its life, and the kubelet takes up to a minute and a half to refresh a mounted Secret); the operator raises anything below its --tls-min-lifetime (1h unless lowered for tests) to it"
	// +optional
	LeafLifetime *metav1.Duration `json:"leafLifetime,omitempty"`

	// CALifetime is how long the CAs the operator makes for this cluster are valid. Default
	// 43800h (5 years); at most 87600h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(h|m|s|ms))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(h|m|s|ms))+$') || duration(self) <= duration('87600h')",message="caLifetime must be at most 87600h (ten years)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(h|m|s|ms))+$') || duration(self) >= duration('15m')",message="caLifetime must be at least 15m (three of the shortest leafLifetime)"
	// +optional
	CALifetime *metav1.Duration `json:"caLifetime,omitempty"`
}

// TLSSource says whose certificates secure a port.
type TLSSource struct {
	// SecretName names a Secret in the cluster's namespace in the kubernetes.io/tls layout that
	// cert-manager writes: tls.crt and tls.key, a certificate for every name a member is
	// reached by (its Service's names, short and full, and the client Service's), valid for
	// both server and client authentication, and ca.crt, the CA that signed it and that peers
	// (or clients) must be signed by. Left empty, the operator issues the certificates.
	// The operator checks the Secret before any member uses it, and copies it into each
	// member's own Secret; a renewed Secret is picked up without restarting members.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="secretName must be a Secret name: lowercase letters, digits, '-' and '.'"
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// TLSStatus is what the operator last observed of a cluster's certificates.
type TLSStatus struct {
	// ClientSecretName is the Secret with a client certificate for applications (ca.crt,
	// tls.crt, tls.key): <name>-client-tls when the operator issues the client certificates.
	// +optional
	ClientSecretName string `json:"clientSecretName,omitempty"`

	// PeerCAExpiry is when the CA that peers trust expires.
	// +optional
	PeerCAExpiry *metav1.Time `json:"peerCAExpiry,omitempty"`

	// ClientCAExpiry is when the CA that the client port trusts expires.
	// +optional
	ClientCAExpiry *metav1.Time `json:"clientCAExpiry,omitempty"`

	// LeafExpiry is when the first of the certificates the members serve expires.
	// +optional
	LeafExpiry *metav1.Time `json:"leafExpiry,omitempty"`

	// PeerCARotation is the step a rotation of the peer port's CA is at; empty when none is
	// under way.
	// +optional
	PeerCARotation CARotationPhase `json:"peerCARotation,omitempty"`

	// ClientCARotation is the step a rotation of the client port's CAs is at; empty when none
	// is under way.
	// +optional
	ClientCARotation CARotationPhase `json:"clientCARotation,omitempty"`
}

// CARotationPhase is a step of a CA rotation (docs/tls.md): the members' Secrets trust the old
// and the new CA together, and the members are restarted onto that (TrustingBoth); every
// member accepts the new CA, and the leaves are issued by it, with no restart (Reissuing);
// every member serves the new leaves, and the old CA is dropped, the members restarted once
// more (DroppingOld).
// +kubebuilder:validation:Enum=TrustingBoth;Reissuing;DroppingOld
type CARotationPhase string

// The steps of a CA rotation.
const (
	CARotationTrustingBoth CARotationPhase = "TrustingBoth"
	CARotationReissuing    CARotationPhase = "Reissuing"
	CARotationDroppingOld  CARotationPhase = "DroppingOld"
)
