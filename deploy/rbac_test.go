package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestRBACGrantsExactlyWhatTheCodeCalls compares the ClusterRole and the leader-election Role
// (the namespaced Role is checked against these two by TestNamespacedVariantMatches) with the
// API calls the operator's code makes, found by type-checking every non-test package of the
// module: each method called on a typed client (PodInterface.Create: create pods), each
// informer used (list and watch of its resource), and the client-go helpers that call the API
// on the operator's behalf (the leader-election Lease lock, the Event sink). A verb granted and
// never called fails, and so does a verb called and not granted.
func TestRBACGrantsExactlyWhatTheCodeCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module with go list -export")
	}
	var clusterRole rbacv1.ClusterRole
	var leaderRole rbacv1.Role
	decodeFile(t, "rbac/clusterrole.yaml", &clusterRole)
	decodeFile(t, "rbac/leader-election-role.yaml", &leaderRole)
	checkGrants(t, usedPermissions(t, func(pkg string) bool { return !isPlugin(pkg) }), append(clusterRole.Rules, leaderRole.Rules...), "deploy/rbac")
}

// TestPluginRoleGrantsExactlyWhatThePluginCalls: kubectl etcd runs with its user's
// credentials, and example/kubectl-etcd-role.yaml is what docs/plugin.md tells its users to
// grant; it is compared with the plugin's own calls as deploy/rbac is with the operator's.
func TestPluginRoleGrantsExactlyWhatThePluginCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module with go list -export")
	}
	var role rbacv1.Role
	decodeFile(t, "../example/kubectl-etcd-role.yaml", &role)
	checkGrants(t, usedPermissions(t, isPlugin), role.Rules, "example/kubectl-etcd-role.yaml")
}

// isPlugin: the package is kubectl etcd's own (its commands, its main).
func isPlugin(pkg string) bool {
	return strings.HasSuffix(pkg, "/pkg/plugin") || strings.HasSuffix(pkg, "/cmd/kubectl-etcd")
}

// checkGrants fails the test for each permission used and not granted by rules, and each
// granted and never used.
func checkGrants(t *testing.T, used map[permission]string, rules []rbacv1.PolicyRule, where string) {
	t.Helper()
	granted := map[permission]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					granted[permission{g, res, v}] = true
				}
			}
		}
	}
	for _, p := range sortedKeys(used) {
		if !granted[p] {
			t.Errorf("the code calls %s (%s) and %s does not grant it", p, used[p], where)
		}
	}
	for _, p := range sortedKeys(granted) {
		if _, ok := used[p]; !ok {
			t.Errorf("%s grants %s and the code never calls it: drop it", where, p)
		}
	}
}

// permission is one verb on one resource of an API group.
type permission struct{ group, resource, verb string }

func (p permission) String() string {
	g := p.group
	if g == "" {
		g = "core"
	}
	return p.verb + " " + g + "/" + p.resource
}

func sortedKeys[V any](m map[permission]V) []permission {
	keys := make([]permission, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b permission) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

// apiGroups maps the folder of a typed client or informer package (.../typed/<folder>/<v>,
// .../informers/<folder>/<v>) to its API group. A folder missing here fails the test: add it.
var apiGroups = map[string]string{
	"core":                  "",
	"policy":                "policy",
	"discovery":             "discovery.k8s.io",
	"coordination":          "coordination.k8s.io",
	"events":                "events.k8s.io",
	"networking":            "networking.k8s.io",
	"apiextensions":         "apiextensions.k8s.io",
	"admissionregistration": "admissionregistration.k8s.io",
	"etcd":                  "etcd.operator.dev",
}

// clientVerbs maps the methods of a typed client to the verb and subresource they use.
var clientVerbs = map[string][2]string{
	"Create": {"create", ""}, "Update": {"update", ""}, "Patch": {"patch", ""}, "Apply": {"patch", ""},
	"Delete": {"delete", ""}, "DeleteCollection": {"deletecollection", ""},
	"Get": {"get", ""}, "List": {"list", ""}, "Watch": {"watch", ""},
	"UpdateStatus": {"update", "status"}, "ApplyStatus": {"patch", "status"},
	"GetScale": {"get", "scale"}, "UpdateScale": {"update", "scale"},
	"EvictV1": {"create", "eviction"},
}

// helpers are client-go types that call the API for the code that uses them.
var helpers = map[string][]permission{
	"k8s.io/client-go/tools/leaderelection/resourcelock.LeaseLock": {
		{"coordination.k8s.io", "leases", "get"}, {"coordination.k8s.io", "leases", "create"}, {"coordination.k8s.io", "leases", "update"}},
	// The event broadcaster creates an Event, and patches it when it repeats.
	"k8s.io/client-go/kubernetes/typed/core/v1.EventSinkImpl": {{"", "events", "create"}, {"", "events", "patch"}},
	// A controller ownerReference to an EtcdCluster (blockOwnerDeletion set): where the
	// OwnerReferencesPermissionEnforcement admission plugin runs, writing one needs update on
	// the owner's finalizers.
	"github.com/etcd-operator/etcd-operator/pkg/member.OwnerReference": {{"etcd.operator.dev", "etcdclusters/finalizers", "update"}},
	// A port-forward POSTs to the pod's portforward subresource (kubectl etcd's Forwarder).
	"k8s.io/client-go/tools/portforward.NewOnAddresses": {{"", "pods/portforward", "create"}},
}

type listedPackage struct {
	ImportPath, Dir, Export string
	GoFiles                 []string
	Module                  *struct{ Main bool }
}

// usedPermissions type-checks the module's packages that keep takes against the export data
// go list builds, and returns each permission the code needs with where it is used.
func usedPermissions(t *testing.T, keep func(pkg string) bool) map[permission]string {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	// built as make builds everything without -race (GO_NORACE in the Makefile), so that go
	// list finds the packages make unit's vet compiled
	cmd := exec.Command(goTool, "list", "-trimpath", "-export", "-deps", "-json", "./...")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Main && !strings.Contains(p.ImportPath, "/pkg/generated/") &&
			!strings.Contains(p.ImportPath, "/test/") && !strings.Contains(p.ImportPath, "/hack/") && keep(p.ImportPath) {
			pkgs = append(pkgs, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	used := map[permission]string{}
	for _, p := range pkgs {
		var files []*ast.File
		for _, f := range p.GoFiles {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, af)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Uses: map[*ast.Ident]types.Object{}}
		if _, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-checking %s: %v", p.ImportPath, err)
		}
		collect(t, fset, info, used)
	}
	return used
}

// collect adds the permissions the calls and uses in info need.
func collect(t *testing.T, fset *token.FileSet, info *types.Info, used map[permission]string) {
	add := func(p permission, pos token.Pos) {
		if _, ok := used[p]; !ok {
			used[p] = fset.Position(pos).String()
		}
	}
	for sel, s := range info.Selections {
		if s.Kind() != types.MethodVal {
			continue
		}
		named := namedOf(s.Recv())
		if named == nil || named.Obj().Pkg() == nil {
			continue
		}
		pkg, typ := named.Obj().Pkg().Path(), named.Obj().Name()
		folder, kind := apiPackage(pkg)
		if kind == "" {
			continue
		}
		group, known := apiGroups[folder]
		switch {
		case kind == "typed" && strings.HasSuffix(typ, "Interface") && !strings.HasSuffix(typ, "V1Interface") && !strings.HasSuffix(typ, "V1alpha1Interface"):
			verb, ok := clientVerbs[sel.Sel.Name]
			if !ok {
				continue
			}
			if !known {
				t.Fatalf("%s: a client of API folder %q: add its group to apiGroups", fset.Position(sel.Pos()), folder)
			}
			res := plural(strings.TrimSuffix(typ, "Interface"))
			if verb[1] != "" {
				res += "/" + verb[1]
			}
			add(permission{group, res, verb[0]}, sel.Pos())
			if sel.Sel.Name == "Apply" {
				// A server-side apply that creates its object is authorized as a create too.
				add(permission{group, res, "create"}, sel.Pos())
			}
		case kind == "informers" && strings.HasSuffix(typ, "Informer"):
			if !known {
				t.Fatalf("%s: an informer of API folder %q: add its group to apiGroups", fset.Position(sel.Pos()), folder)
			}
			res := plural(strings.TrimSuffix(typ, "Informer"))
			add(permission{group, res, "list"}, sel.Pos())
			add(permission{group, res, "watch"}, sel.Pos())
		}
	}
	for id, obj := range info.Uses {
		if obj.Pkg() == nil {
			continue
		}
		for _, p := range helpers[obj.Pkg().Path()+"."+obj.Name()] {
			add(p, id.Pos())
		}
	}
}

// plural is the resource name of a kind, as the API names the kinds the operator uses
// (NetworkPolicy: networkpolicies).
func plural(kind string) string {
	k := strings.ToLower(kind)
	if strings.HasSuffix(k, "y") {
		return strings.TrimSuffix(k, "y") + "ies"
	}
	return k + "s"
}

func namedOf(t types.Type) *types.Named {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := t.(*types.Named)
	return n
}

// apiPackage reads the API folder of a typed client package (kind "typed") or an informer
// package (kind "informers") from its import path; kind is empty for any other package.
func apiPackage(path string) (folder, kind string) {
	parts := strings.Split(path, "/")
	for i := len(parts) - 3; i >= 0; i-- {
		switch {
		case parts[i] == "typed" && i+2 == len(parts)-1:
			return parts[i+1], "typed"
		case (parts[i] == "informers" || parts[i] == "externalversions") && i+2 == len(parts)-1:
			return parts[i+1], "informers"
		}
	}
	return "", ""
}
