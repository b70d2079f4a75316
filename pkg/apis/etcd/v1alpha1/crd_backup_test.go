package v1alpha1_test

import (
	"testing"

	"github.com/etcd-operator/etcd-operator/deploy"
)

// etcdBackup is the manifest of the EtcdBackup b with the given spec, YAML indented by two
// spaces.
func etcdBackup(spec string) string {
	return "apiVersion: etcd.operator.dev/v1alpha1\nkind: EtcdBackup\nmetadata:\n  name: b\n  resourceVersion: \"1\"\nspec:\n" + spec
}

const volumeBackup = "  clusterName: example\n  destination: {volume: {claimName: backups, path: example/}}\n"

func TestCRDValidatesEtcdBackups(t *testing.T) {
	a := newAPIServerFor(t, deploy.EtcdBackupCRD, "EtcdBackup")
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"a volume", volumeBackup, ""},
		{"a volume's root", "  clusterName: example\n  destination: {volume: {claimName: backups}}\n", ""},
		{"Delete", volumeBackup + "  deletionPolicy: Delete\n", ""},
		{"no destination", "  clusterName: example\n  destination: {}\n", "destination takes exactly one of: volume"},
		{"no cluster", "  destination: {volume: {claimName: backups}}\n", "clusterName: Required value"},
		{"an absolute path", "  clusterName: example\n  destination: {volume: {claimName: backups, path: /etc}}\n", "path must be relative"},
		{"a path up", "  clusterName: example\n  destination: {volume: {claimName: backups, path: a/../../x}}\n", "must not contain '..'"},
		{"another policy", volumeBackup + "  deletionPolicy: Orphan\n", "Unsupported value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, errs := a.create(etcdBackup(tc.spec))
			checkErrors(t, errs, tc.want)
			if tc.want == "" && u.Object["spec"].(map[string]any)["deletionPolicy"] == nil {
				t.Error("deletionPolicy not defaulted")
			}
		})
	}
	// What is snapshotted and where cannot change; the deletion policy can.
	checkErrors(t, a.update(a.main, etcdBackup("  clusterName: other\n  destination: {volume: {claimName: backups, path: example/}}\n"),
		etcdBackup(volumeBackup)), "spec.clusterName and spec.destination cannot change")
	checkErrors(t, a.update(a.main, etcdBackup("  clusterName: example\n  destination: {volume: {claimName: other, path: example/}}\n"),
		etcdBackup(volumeBackup)), "spec.clusterName and spec.destination cannot change")
	checkErrors(t, a.update(a.main, etcdBackup(volumeBackup+"  deletionPolicy: Delete\n"), etcdBackup(volumeBackup)), "")
}

const bootstrapImmutable = "spec.bootstrap cannot be added, changed or removed once the cluster exists"

func TestCRDValidatesBootstrapFromBackup(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"a backup's name", "  bootstrap: {fromBackup: {backupName: b}}\n", ""},
		{"a destination and key", "  bootstrap: {fromBackup: {destination: {volume: {claimName: backups}}, key: example/example-b-42.db}}\n", ""},
		{"revision options", "  bootstrap: {fromBackup: {backupName: b, bumpRevision: 1000000000, markCompacted: true}}\n", ""},
		{"both", "  bootstrap: {fromBackup: {backupName: b, destination: {volume: {claimName: backups}}, key: k}}\n", "exactly one of backupName and destination"},
		{"neither", "  bootstrap: {fromBackup: {}}\n", "exactly one of backupName and destination"},
		{"a destination without a key", "  bootstrap: {fromBackup: {destination: {volume: {claimName: backups}}}}\n", "fromBackup.key goes with fromBackup.destination"},
		{"a key up", "  bootstrap: {fromBackup: {destination: {volume: {claimName: backups}}, key: ../x.db}}\n", "must not contain '..'"},
		{"markCompacted alone", "  bootstrap: {fromBackup: {backupName: b, markCompacted: true}}\n", "go together"},
		{"bumpRevision alone", "  bootstrap: {fromBackup: {backupName: b, bumpRevision: 1000}}\n", "go together"},
		{"neither revision option", "  bootstrap: {fromBackup: {backupName: b, bumpRevision: 0, markCompacted: false}}\n", ""},
		{"a negative bump", "  bootstrap: {fromBackup: {backupName: b, bumpRevision: -1}}\n", "should be greater than or equal to 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := a.create(etcdCluster(tc.spec, ""))
			checkErrors(t, errs, tc.want)
		})
	}
	from := "  bootstrap: {fromBackup: {backupName: b}}\n"
	for _, tc := range []struct{ name, spec, old, want string }{
		{"unchanged", from, from, ""},
		{"changed", "  bootstrap: {fromBackup: {backupName: c}}\n", from, bootstrapImmutable},
		{"removed", "  size: 3\n", from, bootstrapImmutable},
		{"added", from, "  size: 3\n", bootstrapImmutable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, a.update(a.main, etcdCluster(tc.spec, ""), etcdCluster(tc.old, "")), tc.want)
		})
	}
}
