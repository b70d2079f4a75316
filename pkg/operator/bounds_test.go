package operator

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/etcd-operator/etcd-operator/pkg/cluster"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
)

func TestBoundFlagsDefaultToProduction(t *testing.T) {
	o := parse(t)
	if o.Bounds != plan.DefaultBounds() || o.TakeoverAfter != cluster.DefaultTakeoverAfter || o.ClientCAOverlap != plan.DefaultHoldersRefresh {
		t.Errorf("bounds %+v, takeover %s, client CA overlap %s: want the production values %+v, %s, %s", o.Bounds, o.TakeoverAfter,
			o.ClientCAOverlap, plan.DefaultBounds(), cluster.DefaultTakeoverAfter, plan.DefaultHoldersRefresh)
	}
}

func TestBoundFlagsSet(t *testing.T) {
	t.Setenv(EnvPodNamespace, "ops")
	t.Setenv(EnvPodName, "me")
	t.Setenv(EnvOperatorImage, "img")
	o := parse(t, "--pod-stuck-after=10s", "--rollout-stuck-after=1m", "--no-quorum-after=5s", "--cluster-takeover-after=2m", "--client-ca-overlap=30s")
	if err := o.Complete(); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := plan.Bounds{StuckAfter: 10 * time.Second, Comeback: time.Minute, Election: 5 * time.Second}
	if o.Bounds != want || o.TakeoverAfter != 2*time.Minute || o.ClientCAOverlap != 30*time.Second {
		t.Errorf("bounds %+v, takeover %s, client CA overlap %s: want %+v, 2m, 30s", o.Bounds, o.TakeoverAfter, o.ClientCAOverlap, want)
	}
}

func TestBoundFlagsValidated(t *testing.T) {
	t.Setenv(EnvPodNamespace, "ops")
	t.Setenv(EnvPodName, "me")
	t.Setenv(EnvOperatorImage, "img")
	for _, arg := range []string{
		"--pod-stuck-after=0s", "--pod-stuck-after=1s", "--pod-stuck-after=2h",
		"--rollout-stuck-after=-1m", "--rollout-stuck-after=5s", "--rollout-stuck-after=90m",
		"--no-quorum-after=0s", "--no-quorum-after=1h",
		"--cluster-takeover-after=30s", "--cluster-takeover-after=2h",
		"--client-ca-overlap=5s", "--client-ca-overlap=2h",
	} {
		t.Run(arg, func(t *testing.T) {
			name := strings.TrimPrefix(strings.Split(arg, "=")[0], "--")
			err := parse(t, arg).Complete()
			if err == nil || !strings.Contains(err.Error(), "--"+name+"=") || !strings.Contains(err.Error(), "must be between") {
				t.Errorf("Complete() = %v, want an error naming --%s and its range", err, name)
			}
		})
	}
}

func TestBoundsLoggedWhenNotProduction(t *testing.T) {
	var buf bytes.Buffer
	log := logrus.New()
	log.SetOutput(&buf)
	parse(t).logBounds(logrus.NewEntry(log))
	if buf.Len() != 0 {
		t.Errorf("production bounds logged: %q", buf.String())
	}
	parse(t, "--pod-stuck-after=10s").logBounds(logrus.NewEntry(log))
	if out := buf.String(); !strings.Contains(out, "pod-stuck-after=10s") || strings.Contains(out, "no-quorum-after") {
		t.Errorf("log %q: want the one bound that differs, pod-stuck-after=10s", out)
	}
}
