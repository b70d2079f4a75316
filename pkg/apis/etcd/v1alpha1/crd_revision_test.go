package v1alpha1_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/deploy"
	"github.com/etcd-operator/etcd-operator/pkg/crd"
)

// schemaDigests holds, for each schema revision of the CRD (the metadata:annotations marker
// on EtcdCluster), the SHA-256 of its spec as JSON. An operator never writes its CRD over one
// of a higher revision (pkg/crd), which is only safe if every change of the schema comes with
// a new revision: this table is how a test knows.
var schemaDigests = map[int]string{
	1:  "228631ff55e20a2a76ca616b9fb909c207426d93b2257ae5758a9fb9a542d8a8",
	2:  "fb40e519d1ade38267ce6e7fdc0dee42ae10aaf47a13a5291e85800b70fad7bb",
	3:  "f7dd16467f150ed9647548607e5412136815a17d1b94eb2866d6ade64194ced8",
	4:  "7310af01a93921baaf7258a16125b377f81c1bbfd2a5d2e0e40eea7a127c32a8",
	5:  "5fd1b0f97de4b71be444d806e065a738b602cb228136ef926f9277b57c537eda",
	6:  "274255b1ed6e240cb6469b8ef0a3266816cd30e1983a0d585fcf87bba986c714",
	7:  "5fd1b0f97de4b71be444d806e065a738b602cb228136ef926f9277b57c537eda",
	8:  "6e5b8adfb2f6fbaf03965d192811971715cc16251c32b883636f5d14ae9ef1d3",
	9:  "5a7156a57096d6163b2c1ac69f97aa9925ae6f2e5f603ce6ec2a20a29bfcf44d",
	10: "e12472ea48eca0adc59edf6588c57bf75a34c72405951b72096e93059795de3b",
	11: "50f480a721033d351cfd2fd46b153d05fe0a9db1421b00b32d2b5160622b14c1",
	12: "aa77adda0df63e231a47cbc467f70257541ea72822832cead0a71609cd88d5d2",
	13: "8c90f6fb824e7411856896493c17238a470826dfba773069f3d1ac972b148c7c",
	14: "98935b3410e31aee4177f03260c27c6d89f061a331f598ea9d6e9c8ee287f788",
	15: "9b8e51551da4f53680829fcf539fd1b1532f0acb98a0146b0a26ee2ed9fc0f6a",
}

// backupSchemaDigests is schemaDigests for the EtcdBackup CRD (the marker on EtcdBackup).
var backupSchemaDigests = map[int]string{
	1: "44c8aae71b5ed248c90e176c3cfb43a1d5d20c6c6e9901a090153ec3088a8151",
	2: "e36e74da89a8d40e8a99c22717470f0267506ee66eacd72deb9ab68f51f4faf8",
}

// scheduleSchemaDigests is schemaDigests for the EtcdBackupSchedule CRD (the marker on
// EtcdBackupSchedule).
var scheduleSchemaDigests = map[int]string{
	1: "740ee5e1cdcc393b62c9a404dc7c973ff807d2e97a7a787001c39bb5f2e34db1",
	2: "afc6a06105fffee90bc767c63b504d6f7aecc75e614290ea7df60c5645a4026d",
}

// TestCRDSchemaRevisionFollowsTheSchema fails when a CRD's schema changed and its revision
// did not, or when the revision went back.
func TestCRDSchemaRevisionFollowsTheSchema(t *testing.T) {
	checkSchemaRevision(t, deploy.EtcdClusterCRD, schemaDigests, "EtcdCluster (types.go)")
	checkSchemaRevision(t, deploy.EtcdBackupCRD, backupSchemaDigests, "EtcdBackup (backup_types.go)")
	checkSchemaRevision(t, deploy.EtcdBackupScheduleCRD, scheduleSchemaDigests, "EtcdBackupSchedule (schedule_types.go)")
}

// checkSchemaRevision checks the revision of the CRD def against its digests; where names the
// marker's place.
func checkSchemaRevision(t *testing.T, def []byte, digests map[int]string, where string) {
	t.Helper()
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(def, &c); err != nil {
		t.Fatal(err)
	}
	rev, err := crd.SchemaRevision(&c)
	if err != nil || c.Annotations[crd.AnnotationSchemaRevision] == "" {
		t.Fatalf("the CRD's schema revision: %q, %v", c.Annotations[crd.AnnotationSchemaRevision], err)
	}
	b, err := json.Marshal(c.Spec)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	digest := hex.EncodeToString(sum[:])
	latest := slices.Max(slices.Collect(maps.Keys(digests)))
	switch want, known := digests[rev]; {
	case rev < latest:
		t.Errorf("schema revision %d is below the latest recorded, %d: revisions only grow", rev, latest)
	case !known:
		t.Errorf("%s: schema revision %d is not recorded: add %d: %q to its digests", where, rev, rev, digest)
	case want != digest:
		t.Errorf("the CRD's schema changed and its revision %d did not: set etcd.operator.dev/schema-revision=%s "+
			"in the marker on %s, run hack/update-codegen.sh and record the new digest in its digests "+
			"(this one is %s)", rev, strconv.Itoa(rev+1), where, digest)
	}
}
