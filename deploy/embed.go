// Package deploy holds the manifests that install the operator. It embeds the CRDs that
// hack/update-codegen.sh generates from the API types into deploy/crd, so that the operator
// creates at startup exactly the CRDs that `kubectl apply -f deploy/` installs.
package deploy

import "embed"

// CRDs holds every file of deploy/crd, each a CustomResourceDefinition in YAML, under the
// path crd/<file>.
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
