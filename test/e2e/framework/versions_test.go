package framework

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
)

// nodeEtcdVersions reads the etcd versions the local node and kind load images of, from the one
// place they are pinned (hack/local/versions.env): the control plane's and the extra ones.
func nodeEtcdVersions(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "hack", "local", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || (key != "ETCD_VERSION" && key != "ETCD_EXTRA_VERSIONS") {
			continue
		}
		for _, v := range strings.Fields(strings.Trim(value, `"'`)) {
			out = append(out, strings.TrimPrefix(v, "v"))
		}
	}
	if len(out) == 0 {
		t.Fatal("versions.env pins no etcd version (ETCD_VERSION, ETCD_EXTRA_VERSIONS)")
	}
	return out
}

// The versions the suite moves clusters along, and the operator's default, are versions the
// node has images of: a bump on one side alone fails here, not as pods in ImagePullBackOff.
func TestVersionsMatchTheNode(t *testing.T) {
	node := nodeEtcdVersions(t)
	for name, v := range map[string]string{"Version35": Version35, "Version36": Version36, "Version37": Version37,
		"the operator's default (api.DefaultVersion)": api.DefaultVersion} {
		if !slices.Contains(node, v) {
			t.Errorf("%s is %s, which hack/local/versions.env does not pin (it has %v)", name, v, node)
		}
	}
	if slices.Contains(node, UnpullableVersion) {
		t.Errorf("UnpullableVersion %s has an image on the node", UnpullableVersion)
	}
}
