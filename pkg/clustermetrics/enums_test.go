package clustermetrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// typedConstants returns the names of the constants of type typ declared in the Go files of
// dir matching glob (tests excluded), read from the source: a constant added there and not to
// this package's closed sets fails the tests below.
func typedConstants(t *testing.T, glob, typ string) []string {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files %s: %v", glob, err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == typ {
					for _, n := range vs.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// Every plan.ActionKind is a value of the action label, exported from zero.
func TestActionKindsListEveryKind(t *testing.T) {
	declared := typedConstants(t, filepath.Join("..", "cluster", "plan", "*.go"), "ActionKind")
	if n := len(slices.Compact(slices.Sorted(slices.Values(strs(actionKinds))))); len(declared) != n || n != len(actionKinds) {
		t.Errorf("the planner declares %d action kinds %v, actionKinds lists %d: each once", len(declared), declared, len(actionKinds))
	}
}

// Every reason an EtcdCluster's condition carries is a value of the reason label, not Other.
func TestConditionReasonsListEveryReason(t *testing.T) {
	declared := typedConstants(t, filepath.Join("..", "apis", "etcd", "v1alpha1", "status_types.go"), "ConditionReason")
	if n := len(slices.Compact(slices.Sorted(slices.Values(strs(conditionReasons))))); len(declared) != n || n != len(conditionReasons) {
		t.Errorf("status_types.go declares %d reasons %v, conditionReasons lists %d: each once", len(declared), declared, len(conditionReasons))
	}
}
