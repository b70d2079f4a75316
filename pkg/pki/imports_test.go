package pki

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The package is pure by its imports, not by convention: it may use only these standard
// packages, none of which reads files, talks to the API server or etcd, or lets a package of
// this module in. net is here for net.IP, the type of Request.IPs.
var allowedImports = map[string]bool{
	"bytes": true, "crypto": true, "crypto/ecdsa": true, "crypto/elliptic": true,
	"crypto/rand": true, "crypto/sha256": true, "crypto/x509": true, "crypto/x509/pkix": true,
	"encoding/hex": true, "encoding/pem": true, "errors": true, "fmt": true, "math/big": true, "net": true,
	"slices": true, "strings": true, "time": true,
}

// TestPureImports: no file of the package imports anything but allowedImports, and none
// reads the clock (every time is an argument) or uses net for more than its IP type.
func TestPureImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly|parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", name, err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !allowedImports[path] {
				t.Errorf("%s imports %s", name, path)
			}
		}
		f, err = parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("parsing %s: %v", name, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if id.Name == "time" && (sel.Sel.Name == "Now" || sel.Sel.Name == "Since" || sel.Sel.Name == "Until") {
				t.Errorf("%s: time.%s: the time is the caller's now", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			if id.Name == "net" && sel.Sel.Name != "IP" {
				t.Errorf("%s: net.%s: net is imported for its IP type only", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
		checked++
	}
	if checked == 0 {
		t.Fatal("no file checked")
	}
}
