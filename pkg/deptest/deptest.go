// Package deptest lists what a package links, as go list -deps says, for the tests that keep
// a package's dependencies in check (the planner's purity, what each binary links).
package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// Package is what go list -json says of one package.
type Package struct {
	ImportPath string
	Module     *struct{ Path string }
	Imports    []string
}

// Deps lists the package in the test's folder and every package it depends on, directly or
// not, the package itself last. It skips the test when there is no go command.
func Deps(t testing.TB) []Package {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-json=ImportPath,Module,Imports", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var deps []Package
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list: %v", err)
		}
		deps = append(deps, p)
	}
	if len(deps) == 0 {
		t.Fatal("go list listed no package")
	}
	return deps
}

// Under reports whether the import path p is prefix or one of its subpackages.
func Under(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}
