package deploy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The chart (charts/etcd-operator) and the kustomizations (deploy/, deploy/namespaced/) are
// rendered by hack/tools/helm/render: the chart as `helm template` renders it, with the helm
// make helm builds, and a kustomization as `kubectl apply -k` builds it, with the kustomize
// library of the pinned kubectl. That program lives in the helm tool module, so that neither
// helm nor kustomize enters the operator's go.mod; it is built once, into the tool cache
// (ETCD_OPERATOR_CACHE, as hack/ builds its tools), keyed by its source.

const (
	toolModule = "../hack/tools/helm"
	chartDir   = "../charts/etcd-operator"
)

var (
	rendererOnce sync.Once
	rendererPath string
	rendererErr  error
)

// renderer returns the path of the render program, building it when its source changed.
func renderer(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds hack/tools/helm/render (helm's and kustomize's libraries)")
	}
	rendererOnce.Do(func() { rendererPath, rendererErr = buildRenderer() })
	if rendererErr != nil {
		t.Fatal(rendererErr)
	}
	return rendererPath
}

func buildRenderer() (string, error) {
	h := sha256.New()
	for _, f := range []string{"render/main.go", "go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(toolModule, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	cache := os.Getenv("ETCD_OPERATOR_CACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(dir, "etcd-operator")
	}
	out := filepath.Join(cache, "tools", "render-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	// built as hack/helm.sh builds helm from the same module (tool_from_module), so that
	// helm's packages are compiled once for both
	cmd := exec.Command(goTool, "build", "-trimpath", "-o", out+".part", "./render")
	cmd.Dir = toolModule
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building hack/tools/helm/render: %v\n%s", err, b)
	}
	return out, os.Rename(out+".part", out)
}

// object is one rendered manifest: its kind, name and namespace, and the whole object as
// decoded from YAML.
type object struct {
	Kind, Name, Namespace string
	Body                  map[string]any
}

func (o object) key() string { return o.Kind + " " + o.Namespace + "/" + o.Name }

// decodeInto decodes the object into a typed value, refusing unknown fields.
func (o object) decodeInto(t *testing.T, into any) {
	t.Helper()
	b, err := yaml.Marshal(o.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("decoding %s: %v", o.key(), err)
	}
}

// rendered is a rendering's objects by kind, namespace and name.
type rendered map[string]object

// one returns the only object of kind, failing the test when there is not exactly one.
func (r rendered) one(t *testing.T, kind string) object {
	t.Helper()
	var found []object
	for _, o := range r {
		if o.Kind == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s rendered (%v), want 1", len(found), kind, r.keys())
	}
	return found[0]
}

func (r rendered) keys() []string {
	var keys []string
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// render runs the render program with args and decodes what it prints.
func render(t *testing.T, args ...string) rendered {
	t.Helper()
	cmd := exec.Command(renderer(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("render %v: %v\n%s", args, err, stderr.String())
	}
	objs := rendered{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("render %v: %v", args, err)
		}
		var body map[string]any
		if err := yaml.Unmarshal(doc, &body); err != nil {
			t.Fatalf("render %v: decoding %q: %v", args, doc, err)
		}
		if body == nil {
			continue
		}
		meta, _ := body["metadata"].(map[string]any)
		o := object{Body: body}
		o.Kind, _ = body["kind"].(string)
		o.Name, _ = meta["name"].(string)
		o.Namespace, _ = meta["namespace"].(string)
		if _, dup := objs[o.key()]; dup {
			t.Fatalf("render %v: %s rendered twice", args, o.key())
		}
		objs[o.key()] = o
	}
	return objs
}

// renderKustomization builds the kustomization in dir (relative to deploy/).
func renderKustomization(t *testing.T, dir string) rendered {
	t.Helper()
	return render(t, "kustomize", dir)
}

// renderChart renders the chart as release etcd-operator in namespace with the values set
// (helm's --set syntax) and the API versions the cluster would serve.
func renderChart(t *testing.T, namespace string, sets []string, apiVersions ...string) rendered {
	t.Helper()
	args := []string{"chart", "-namespace", namespace}
	for _, s := range sets {
		args = append(args, "-set", s)
	}
	for _, v := range apiVersions {
		args = append(args, "-api-versions", v)
	}
	return render(t, append(args, chartDir)...)
}
