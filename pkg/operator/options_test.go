package operator

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return &o
}

func TestOptionsDefaultsFromEnvironment(t *testing.T) {
	t.Setenv(EnvPodNamespace, "ops")
	t.Setenv(EnvPodName, "etcd-operator-7d9f-abcde")
	t.Setenv(EnvOperatorImage, "registry.example/etcd-operator:v1")
	o := parse(t)
	if err := o.Complete(); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if o.LeaseNamespace != "ops" || o.Identity != "etcd-operator-7d9f-abcde" || o.MemberInitImage != "registry.example/etcd-operator:v1" {
		t.Errorf("environment defaults not applied: %+v", o)
	}
	if !o.LeaderElect || o.LeaseDuration != 15*time.Second || o.RenewDeadline != 10*time.Second ||
		o.RetryPeriod != 2*time.Second || o.ResyncPeriod != DefaultResyncPeriod || o.MetricsAddr != ":8080" {
		t.Errorf("flag defaults wrong: %+v", o)
	}
}

func TestOptionsValidation(t *testing.T) {
	t.Setenv(EnvPodNamespace, "ops")
	t.Setenv(EnvPodName, "me")
	t.Setenv(EnvOperatorImage, "img")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--member-init-image="}, "--member-init-image"},
		{[]string{"--leader-elect-lease-duration=5s"}, "lease-duration must be greater"},
		{[]string{"--leader-elect-retry-period=9s"}, "renew-deadline must be greater than 1.2"},
		{[]string{"--workers=0"}, "--workers"},
		{[]string{"--resync-period=-1s"}, "--resync-period"},
		{[]string{"--shutdown-grace=0s"}, "--shutdown-grace"},
		{[]string{"--metrics-addr="}, "--metrics-addr"},
		{[]string{"--profiling-addr=:8081"}, "--profiling-addr must differ"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			err := parse(t, tt.args...).Complete()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Complete() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	// Without leader election its settings are not checked.
	if err := parse(t, "--leader-elect=false", "--leader-elect-lease-duration=1s").Complete(); err != nil {
		t.Errorf("Complete() without leader election = %v, want nil", err)
	}
}
