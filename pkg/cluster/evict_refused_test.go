package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// The API server's answer while a second budget selects the member pods.
var twoBudgetsRefusal = apierrors.NewInternalError(errors.New("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))

var refusedAt = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// recordedRefusal is the refusal written on pod demo-1 in the fixture's clientset; false when
// none is.
func recordedRefusal(t *testing.T, f *fixture) (*corev1.Pod, member.EvictionRefusal, bool) {
	t.Helper()
	p, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), "demo-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := member.ReadEvictionRefusal(p)
	return p, e, ok
}

// refusalEvents drains the fixture's recorder and counts the EvictionRefused Events in it.
func refusalEvents(f *fixture) int {
	n := 0
	for {
		select {
		case e := <-f.recorder.Events:
			if strings.Contains(e, string(EventEvictionRefused)) {
				n++
			}
		default:
			return n
		}
	}
}

// The first refusal of an eviction records on the pod, through the actor, when the refusals
// began, under which spec and what the API server said, and says so in an Event; a second
// refusal like it writes nothing and records no Event, so a rollout held by refusals makes no
// write per pass, an operator restarted counts its bound from the same time, and the waiting
// does not spend the cluster's Events (client-go drops an object's Events past a budget).
func TestEvictionRefusalRecordedOnce(t *testing.T) {
	f, p, evictions := evictionFixture(t, twoBudgetsRefusal)
	f.r.now = func() time.Time { return refusedAt }
	c := newCluster(3)
	var refused *evictionRefused
	if _, err := f.r.rollMember(context.Background(), c, p, true, "rolling"); !errors.As(err, &refused) {
		t.Fatalf("rollMember = %v, want the refusal", err)
	}
	if n := len(f.actions("patch", "pods")); n != 1 {
		t.Fatalf("%d patches of pods at the first refusal, want 1", n)
	}
	p, e, ok := recordedRefusal(t, f)
	if !ok || !e.Since.Equal(refusedAt) || e.Generation != c.Generation || e.Message != refused.message {
		t.Fatalf("recorded %+v (%v), want since %v, generation %d, %q", e, ok, refusedAt, c.Generation, refused.message)
	}
	if n := refusalEvents(f); n != 1 {
		t.Errorf("%d %s Events at the first refusal, want 1", n, EventEvictionRefused)
	}

	f.r.now = func() time.Time { return refusedAt.Add(time.Hour) }
	if _, err := f.r.rollMember(context.Background(), c, p, true, "rolling"); !errors.As(err, &refused) {
		t.Fatalf("rollMember = %v, want the refusal", err)
	}
	if len(*evictions) != 2 {
		t.Errorf("%d evictions asked, want 2: each pass tries again", len(*evictions))
	}
	if n := len(f.actions("patch", "pods")); n != 1 {
		t.Errorf("%d patches of pods after a second refusal like the first, want still 1", n)
	}
	if n := refusalEvents(f); n != 0 {
		t.Errorf("%d %s Events at a second refusal like the first, want none", n, EventEvictionRefused)
	}
}

// A refusal recorded under an earlier spec (a rollout given up) starts the count again; a
// changed answer is written with the time the refusals began.
func TestEvictionRefusalRewritten(t *testing.T) {
	for _, tc := range []struct {
		name  string
		had   member.EvictionRefusal
		since time.Time
	}{
		{"another answer under the same spec: the count goes on",
			member.EvictionRefusal{Since: refusedAt.Add(-time.Hour), Generation: 1, Message: "Cannot evict pod as it would violate the pod's disruption budget."},
			refusedAt.Add(-time.Hour)},
		{"a refusal under an earlier spec: the count starts again",
			member.EvictionRefusal{Since: refusedAt.Add(-time.Hour), Generation: 0, Message: twoBudgetsRefusal.ErrStatus.Message},
			refusedAt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, p, _ := evictionFixture(t, twoBudgetsRefusal, func(p *corev1.Pod) {
				p.Annotations[member.AnnotationEvictionRefused] = tc.had.Encode()
			})
			f.r.now = func() time.Time { return refusedAt }
			if _, err := f.r.rollMember(context.Background(), newCluster(3), p, true, "rolling"); err == nil {
				t.Fatal("rollMember: no refusal")
			}
			_, e, ok := recordedRefusal(t, f)
			if !ok || !e.Since.Equal(tc.since) || e.Generation != 1 || e.Message != twoBudgetsRefusal.ErrStatus.Message {
				t.Errorf("recorded %+v (%v), want since %v under generation 1 with the new answer", e, ok, tc.since)
			}
		})
	}
}

// The planner's report of refusals past the bound stays while the API server still refuses,
// and ends with the pass whose eviction it allows.
func TestEvictionRefusedReport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  error
		blocked api.ConditionReason
	}{
		{"still refused", twoBudgetsRefusal, api.ReasonEvictionRefused},
		{"evicted at last", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, p, _ := evictionFixture(t, tc.answer)
			c := newCluster(3)
			o := observed(c)
			o.pods[1] = p
			d := plan.Decision{Action: &plan.Action{Kind: plan.ActionRollMember, Ordinal: 1, MemberID: 101, Evict: true},
				Progress: api.ReasonRollingPods, Message: "restarting member demo-1",
				Blocked: api.ReasonEvictionRefused, Report: "the API server has refused to evict pod demo-1 for more than 2m0s"}
			got, _, err := f.r.takeDecision(context.Background(), c, o, plan.State{}, d)
			if err != nil {
				t.Fatalf("takeDecision: %v", err)
			}
			if got.Blocked != tc.blocked || (tc.blocked != "") != (got.Report == d.Report) || got.Progress != api.ReasonRollingPods {
				t.Errorf("decision %+v, want blocked %q", got, tc.blocked)
			}
		})
	}
}

// The planner sees a refusal recorded under the cluster's current spec only.
func TestPodViewEvictionRefusal(t *testing.T) {
	c := newCluster(3)
	o := observed(c)
	p := o.pods[1]
	p.Annotations[member.AnnotationEvictionRefused] = member.EvictionRefusal{Since: refusedAt, Generation: 1, Message: "no"}.Encode()
	if v := o.podView(1, p); !v.EvictionRefusedSince.Equal(refusedAt) || v.EvictionRefusal != "no" {
		t.Errorf("view %v %q, want the refusal since %v", v.EvictionRefusedSince, v.EvictionRefusal, refusedAt)
	}
	c.Generation = 2
	if v := o.podView(1, p); !v.EvictionRefusedSince.IsZero() {
		t.Errorf("a refusal under an earlier spec is seen: since %v", v.EvictionRefusedSince)
	}
}
