//go:build e2e

package e2e

import (
	"os"
	"testing"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// TestMain stops the suite's API proxy (framework/api.go) once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	framework.StopAPIProxy()
	os.Exit(code)
}
