package deploy_test

import (
	"flag"
	"io"
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/operator"
)

// overlayDir is the kustomization make test deploys for the end-to-end suite.
const overlayDir = "../test/e2e/deploy"

// argsPath is where the overlay's patches add the operator's flags.
const argsPath = "/spec/template/spec/containers/0/args/-"

// overlay is what test/e2e/deploy/kustomization.yaml may hold.
type overlay struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Target struct {
			Group     string `json:"group"`
			Version   string `json:"version"`
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"target"`
		Patch string `json:"patch"`
	} `json:"patches"`
}

// jsonPatchOp is one operation of a patch of the overlay.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value"`
}

// TestE2EOverlayOnlyShortensBounds: the end-to-end suite's deployment is deploy/ with flags
// added to the operator's args and nothing else; the operator accepts them (a flag it does not
// know, or a bound out of its range, would stop it at make test's deploy), and they shorten
// the bounds the suite waits for.
func TestE2EOverlayOnlyShortensBounds(t *testing.T) {
	b, err := os.ReadFile(overlayDir + "/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k overlay
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("decoding the overlay: %v", err)
	}
	if !slices.Equal(k.Resources, []string{"../../../deploy"}) {
		t.Errorf("overlay resources %v, want deploy/ alone", k.Resources)
	}
	var d appsv1.Deployment
	if b, err = os.ReadFile("deployment.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(d.Spec.Template.Spec.Containers[0].Args)
	for _, p := range k.Patches {
		if tg := p.Target; tg.Group != "apps" || tg.Kind != "Deployment" || tg.Name != d.Name || tg.Namespace != d.Namespace {
			t.Errorf("a patch targets %+v, want the operator's Deployment %s/%s", tg, d.Namespace, d.Name)
		}
		var ops []jsonPatchOp
		if err := yaml.UnmarshalStrict([]byte(p.Patch), &ops); err != nil {
			t.Fatalf("decoding a patch: %v", err)
		}
		for _, op := range ops {
			if op.Op != "add" || op.Path != argsPath {
				t.Errorf("patch operation %+v: the overlay only adds to %s", op, argsPath)
			}
			args = append(args, op.Value)
		}
	}
	bounds := parseOperatorArgs(t, args)
	defaults := plan.DefaultBounds()
	if bounds.StuckAfter >= defaults.StuckAfter || bounds.Comeback >= defaults.Comeback {
		t.Errorf("the overlay's bounds %+v do not shorten the production %+v", bounds, defaults)
	}
}

// parseOperatorArgs parses args as the operator does, checks them as it does at start, and
// returns the bounds they set.
func parseOperatorArgs(t *testing.T, args []string) plan.Bounds {
	t.Helper()
	t.Setenv(operator.EnvPodNamespace, "etcd-operator-system")
	t.Setenv(operator.EnvPodName, "etcd-operator-0")
	t.Setenv(operator.EnvOperatorImage, "etcd-operator:dev")
	var o operator.Options
	fs := flag.NewFlagSet("etcd-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the operator refuses args %q: %v", args, err)
	}
	if err := o.Complete(); err != nil {
		t.Fatalf("the operator refuses args %q: %v", args, err)
	}
	return o.Bounds
}
