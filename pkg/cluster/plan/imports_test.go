package plan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/deptest"
)

// The planner is pure by its imports, not by convention: these tests fail the build of any
// change that lets it do I/O.

// forbiddenDeps are the packages (and their subpackages) that talk to the API server or to
// etcd; none may be in the planner's dependencies, directly or not.
var forbiddenDeps = []string{
	"k8s.io/client-go",
	"go.etcd.io/etcd/client",
	"google.golang.org/grpc",
}

// forbiddenImports are the standard packages that do I/O; no package of this module in the
// planner's dependencies may import one directly (the standard library itself may: fmt
// imports os). net/url is allowed: parsing a URL is pure.
var forbiddenImports = map[string]bool{
	"net": true, "net/http": true, "os": true, "os/exec": true, "syscall": true,
}

func TestPlanDoesNoIO(t *testing.T) {
	deps := deptest.Deps(t)
	module := deps[len(deps)-1].Module.Path
	for _, p := range deps {
		for _, f := range forbiddenDeps {
			if deptest.Under(p.ImportPath, f) {
				t.Errorf("the planner depends on %s", p.ImportPath)
			}
		}
		if p.Module == nil || p.Module.Path != module {
			continue
		}
		for _, imp := range p.Imports {
			if forbiddenImports[imp] {
				t.Errorf("%s, in the planner's dependencies, imports %s", p.ImportPath, imp)
			}
		}
	}
}

// TestPlanReadsNoClock: the pass's time is State.Now; no rule reads the clock.
func TestPlanReadsNoClock(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("parsing %s: %v", name, err)
		}
		timePkg := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"time"` {
				timePkg = "time"
				if imp.Name != nil {
					timePkg = imp.Name.Name
				}
			}
		}
		if timePkg == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == timePkg && (sel.Sel.Name == "Now" || sel.Sel.Name == "Since" || sel.Sel.Name == "Until") {
				t.Errorf("%s: time.%s: the planner's time is State.Now", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
