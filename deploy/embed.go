// Package deploy holds the manifests that install the operator. It embeds the CRDs that
// hack/update-codegen.sh generates from the API types into deploy/crd, and the admission
// policy beside them, so that the operator creates at startup exactly the objects that
// `kubectl apply -f deploy/crd/` installs.
package deploy

import "embed"

// CRDs holds every file of deploy/crd, under the path crd/<file>: the CustomResourceDefinitions
// and the file of TLSDefaultPolicy, all YAML.
//
//go:embed crd/*.yaml
var CRDs embed.FS

// EtcdClusterCRD is the YAML of the EtcdCluster CustomResourceDefinition,
// deploy/crd/etcd.operator.dev_etcdclusters.yaml. Callers must not modify it.
//
//go:embed crd/etcd.operator.dev_etcdclusters.yaml
var EtcdClusterCRD []byte

// EtcdBackupCRD is the YAML of the EtcdBackup CustomResourceDefinition,
// deploy/crd/etcd.operator.dev_etcdbackups.yaml. Callers must not modify it.
//
//go:embed crd/etcd.operator.dev_etcdbackups.yaml
var EtcdBackupCRD []byte

// EtcdBackupScheduleCRD is the YAML of the EtcdBackupSchedule CustomResourceDefinition,
// deploy/crd/etcd.operator.dev_etcdbackupschedules.yaml. Callers must not modify it.
//
//go:embed crd/etcd.operator.dev_etcdbackupschedules.yaml
var EtcdBackupScheduleCRD []byte

// TLSDefaultPolicy is the YAML of the MutatingAdmissionPolicy that gives an EtcdCluster created
// without spec.tls peer TLS, and of its binding, two documents of
// deploy/crd/etcd.operator.dev_tls-default.yaml. Callers must not modify it.
//
//go:embed crd/etcd.operator.dev_tls-default.yaml
var TLSDefaultPolicy []byte
