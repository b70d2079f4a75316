package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/deploy"
)

// etcdBackupSchedule is the manifest of the EtcdBackupSchedule name with the given spec,
// YAML indented by two spaces.
func etcdBackupSchedule(name, spec string) string {
	return "apiVersion: etcd.operator.dev/v1alpha1\nkind: EtcdBackupSchedule\nmetadata:\n  name: " + name +
		"\n  resourceVersion: \"1\"\nspec:\n" + spec
}

const scheduledTemplate = "  backupTemplate: {clusterName: example, destination: {volume: {claimName: backups, path: example/}}}\n"

func TestCRDValidatesEtcdBackupSchedules(t *testing.T) {
	a := newAPIServerFor(t, deploy.EtcdBackupScheduleCRD, "EtcdBackupSchedule")
	every6h := "  schedule: \"0 */6 * * *\"\n"
	for _, tc := range []struct {
		name, meta, spec, want string
	}{
		{"the least", "s", every6h + scheduledTemplate, ""},
		{"every field", "s", every6h + "  timeZone: Europe/Paris\n  keep: 3\n  suspend: true\n" +
			"  backupTemplate: {clusterName: example, destination: {volume: {claimName: backups}}, deletionPolicy: Retain}\n", ""},
		{"a name of 41", strings.Repeat("s", 41), every6h + scheduledTemplate, ""},
		{"a name of 42", strings.Repeat("s", 42), every6h + scheduledTemplate, "metadata.name must be at most 41 characters"},
		{"no schedule", "s", scheduledTemplate, "spec.schedule: Required value"},
		{"an empty schedule", "s", "  schedule: \"\"\n" + scheduledTemplate, "should be at least 1 chars long"},
		{"keep 0", "s", every6h + "  keep: 0\n" + scheduledTemplate, "spec.keep: Invalid value: 0: spec.keep in body should be greater than or equal to 1"},
		{"no template", "s", every6h, "spec.backupTemplate: Required value"},
		{"no destination", "s", every6h + "  backupTemplate: {clusterName: example, destination: {}}\n", "destination takes exactly one of: volume, s3"},
		{"s3", "s", every6h + "  backupTemplate: {clusterName: example, destination: {s3: " + s3Fields("prefix: etcd/") + "}}\n", ""},
		{"s3 with a bad bucket", "s", every6h + "  backupTemplate: {clusterName: example, destination: {s3: " + s3Fields("bucket: a..b") + "}}\n", "bucket must be a bucket name"},
		{"no cluster", "s", every6h + "  backupTemplate: {destination: {volume: {claimName: backups}}}\n", "clusterName: Required value"},
		{"a path up", "s", every6h + "  backupTemplate: {clusterName: example, destination: {volume: {claimName: backups, path: ../x}}}\n", "must not contain '..'"},
		{"another policy", "s", every6h + "  backupTemplate: {clusterName: example, destination: {volume: {claimName: backups}}, deletionPolicy: Orphan}\n", "Unsupported value"},
		{"a time zone in the schedule", "s", "  schedule: \"CRON_TZ=Europe/Paris 0 2 * * *\"\n" + scheduledTemplate, "use spec.timeZone"},
		{"@every", "s", "  schedule: \"@every 1h\"\n" + scheduledTemplate, "@every is not supported"},
		{"Local", "s", every6h + "  timeZone: Local\n" + scheduledTemplate, "timeZone must be an IANA name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, errs := a.create(etcdBackupSchedule(tc.meta, tc.spec))
			checkErrors(t, errs, tc.want)
			if tc.want != "" || tc.name != "the least" {
				return
			}
			spec := u.Object["spec"].(map[string]any)
			policy := spec["backupTemplate"].(map[string]any)["deletionPolicy"]
			if spec["keep"] != int64(7) || policy != "Delete" {
				t.Errorf("keep %v, deletionPolicy %v; want the defaults 7 and Delete", spec["keep"], policy)
			}
		})
	}
}
