package v1alpha1_test

import (
	"strings"
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
		{"no destination", "  clusterName: example\n  destination: {}\n", "destination takes exactly one of: volume, s3"},
		{"s3", s3Backup(""), ""},
		{"s3 over https with a region, a prefix and a CA", s3Backup("endpoint: https://s3.eu-west-3.amazonaws.com:443, region: eu-west-3, prefix: etcd/prod/, caSecret: {name: ca}"), ""},
		{"both volume and s3", "  clusterName: example\n  destination: {volume: {claimName: backups}, s3: " + s3Fields("") + "}\n", "destination takes exactly one of: volume, s3"},
		{"an endpoint that is no URL", s3Backup("endpoint: s3.example.com"), "endpoint must be a URL with a host, http:// or https://"},
		{"an endpoint of another scheme", s3Backup("endpoint: ftp://s3.example.com"), "endpoint must be a URL with a host, http:// or https://"},
		{"an endpoint with a path", s3Backup("endpoint: https://s3.example.com/bucket"), "endpoint must have no path and no query"},
		{"a bucket in capitals", s3Backup("bucket: Backups"), "spec.destination.s3.bucket"},
		{"a bucket too short", s3Backup("bucket: ab"), "spec.destination.s3.bucket"},
		{"a bucket with '..'", s3Backup("bucket: a..b"), "bucket must be a bucket name"},
		{"a bucket like an IP address", s3Backup("bucket: 10.0.0.1"), "bucket must be a bucket name"},
		{"an absolute prefix", s3Backup("prefix: /etcd"), "prefix must be relative"},
		{"a prefix up", s3Backup("prefix: a/../../b"), "prefix must be relative"},
		{"no credentials", "  clusterName: example\n  destination: {s3: {endpoint: 'http://s3.example.com', bucket: backups}}\n", "credentialsSecret: Required value"},
		{"a region with a space", s3Backup("region: 'us east'"), "spec.destination.s3.region"},
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

// s3Fields is an s3 destination in flow style, its fields replaced or added by over
// ("key: value, ...").
func s3Fields(over string) string {
	fields := map[string]string{"endpoint": "'http://versitygw.etcd-s3.svc.cluster.local:7070'", "bucket": "etcd-backups",
		"forcePathStyle": "true", "credentialsSecret": "{name: s3-credentials}"}
	order := []string{"endpoint", "bucket", "forcePathStyle", "credentialsSecret"}
	for _, kv := range strings.Split(over, ", ") {
		k, v, ok := strings.Cut(kv, ": ")
		if !ok {
			continue
		}
		if _, known := fields[k]; !known {
			order = append(order, k)
		}
		if strings.Contains(v, "://") {
			v = "'" + v + "'"
		}
		fields[k] = v
	}
	var out []string
	for _, k := range order {
		out = append(out, k+": "+fields[k])
	}
	return "{" + strings.Join(out, ", ") + "}"
}

// s3Backup is the spec of a backup of example to s3Fields(over).
func s3Backup(over string) string {
	return "  clusterName: example\n  destination: {s3: " + s3Fields(over) + "}\n"
}

const bootstrapImmutable = "spec.bootstrap cannot be added, changed or removed once the cluster exists"

func TestCRDValidatesBootstrapFromBackup(t *testing.T) {
	a := newAPIServer(t)
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"a backup's name", "  bootstrap: {fromBackup: {backupName: b}}\n", ""},
		{"a destination and key", "  bootstrap: {fromBackup: {destination: {volume: {claimName: backups}}, key: example/example-b-42.db}}\n", ""},
		{"an s3 destination and key", "  bootstrap: {fromBackup: {destination: {s3: " + s3Fields("") + "}, key: default/example-b.db}}\n", ""},
		{"an s3 destination with a path", "  bootstrap: {fromBackup: {destination: {s3: " + s3Fields("endpoint: http://s3.example.com/x") + "}, key: k}}\n", "endpoint must have no path"},
		{"both destinations", "  bootstrap: {fromBackup: {destination: {volume: {claimName: backups}, s3: " + s3Fields("") + "}, key: k}}\n", "destination takes exactly one of: volume, s3"},
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
