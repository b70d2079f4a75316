//go:build e2e

package e2e

import (
	"encoding/json"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/operator"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// The time bounds a test waits for (a pod that cannot start, a rolled member that does not
// come back) are the operator's flags: production values from deploy/, shorter ones from
// test/e2e/deploy, which make test deploys (docs/testing.md). A test that waits for one reads
// it from the running operator's Deployment, so its deadline holds under either.

// operatorBounds are the bounds the installed operator runs with: its Deployment's args,
// parsed as the operator parses them, with the production value of each it does not set.
func operatorBounds(t *testing.T, f *framework.Framework) plan.Bounds {
	t.Helper()
	_, o := operatorFlags(t, f)
	b := o.Bounds.WithDefaults()
	t.Logf("the operator runs with --%s=%s --%s=%s --%s=%s", operator.FlagPodStuckAfter, b.StuckAfter,
		operator.FlagRolloutStuckAfter, b.Comeback, operator.FlagNoQuorumAfter, b.Election)
	return b
}

// tlsMinLifetimeFlag is the operator's flag for the shortest spec.tls.leafLifetime it honours
// (a shorter one is raised to it): an hour in production, less in test/e2e/deploy.
const tlsMinLifetimeFlag = "tls-min-lifetime"

// operatorTLSMinLifetime is the shortest spec.tls.leafLifetime the installed operator honours.
func operatorTLSMinLifetime(t *testing.T, f *framework.Framework) time.Duration {
	t.Helper()
	fs, _ := operatorFlags(t, f)
	fl := fs.Lookup(tlsMinLifetimeFlag)
	if fl == nil {
		t.Fatalf("the operator has no --%s", tlsMinLifetimeFlag)
	}
	d, ok := fl.Value.(flag.Getter).Get().(time.Duration)
	if !ok {
		t.Fatalf("--%s is not a duration", tlsMinLifetimeFlag)
	}
	t.Logf("the operator runs with --%s=%s", tlsMinLifetimeFlag, d)
	return d
}

// operatorFlags parses the installed operator's args as the operator does.
func operatorFlags(t *testing.T, f *framework.Framework) (*flag.FlagSet, *operator.Options) {
	t.Helper()
	out, err := f.Kubectl("-n", framework.OperatorNamespace, "get", "deployment", "etcd-operator", "-o", "json")
	if err != nil {
		t.Fatalf("reading the operator's Deployment: %v", err)
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string `json:"args"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Spec.Template.Spec.Containers) == 0 {
		t.Fatalf("the operator's Deployment %q: %v", out, err)
	}
	args := d.Spec.Template.Spec.Containers[0].Args
	var o operator.Options
	fs := flag.NewFlagSet("etcd-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing the operator's args %q: %v", args, err)
	}
	return fs, &o
}
