package framework

// The etcd versions the upgrade tests move clusters along. The node must have their images,
// gcr.io/etcd-development/etcd:v<version>, which hack/local/versions.env pins: change both
// together (TestVersionsMatchTheNode checks them, and the operator's default, against it).
const (
	// Version35 is the 3.5 release upgrades start from (3.5.32 or later, as etcd's 3.6
	// upgrade guide requires).
	Version35 = "3.5.35"
	// Version36 is the 3.6 release.
	Version36 = "3.6.16"
	// Version37 is the newest release the operator supports, and its default.
	Version37 = "3.7.3"
	// UnpullableVersion is a supported version whose image does not exist.
	UnpullableVersion = "3.6.999"
)
