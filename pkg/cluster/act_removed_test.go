package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/pkg/cluster/plan"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// A member's claim is flagged as its member's removed before the member is removed, and every
// other member's before a survivor's pod goes to restart it with --force-new-cluster: a pass
// without a member list (and a status behind etcd) must not count that claim as a member. A
// claim flagged already, or marked with another member, is left alone; a flag that cannot be
// written stops the step.
func TestActFlagsTheClaimsOfRemovedMembers(t *testing.T) {
	c := newCluster(3)
	c.Spec.Storage = member.DefaultStorage()
	flag := func(ord int, id string) string {
		return fmt.Sprintf("SetClaimAnnotation data-demo-%d %s=%s", ord, member.AnnotationRemoved, id)
	}
	remove := plan.Action{Kind: plan.ActionRemoveMember, Ordinal: 0, MemberID: 100}
	removed := "RemoveMember 0 64 via [http://10.0.0.2:2379]"
	force := plan.Action{Kind: plan.ActionForceNewCluster, Ordinal: 1, MemberID: 101}
	for _, tc := range []struct {
		name   string
		action plan.Action
		// marks are the claims' member marks by ordinal ("" unmarked), flagged those flagged.
		marks   []string
		flagged []int
		err     error
		want    []string
	}{
		{"remove: flagged, then removed", remove, []string{"64", "65", "66"}, nil, nil, []string{flag(0, "64"), removed}},
		{"remove: flagged already", remove, []string{"64", "65", "66"}, []int{0}, nil, []string{removed}},
		{"remove: the claim holds another member's data", remove, []string{"99", "65", "66"}, nil, nil, []string{removed}},
		{"remove: the flag cannot be written, the member stays", remove, []string{"64", "65", "66"}, nil, errors.New("boom"), []string{flag(0, "64")}},
		{"force: every other member's claim flagged before the survivor's pod goes", force, []string{"64", "65", "66"}, nil, nil,
			[]string{flag(0, "64"), flag(2, "66"), "DeletePod demo-1"}},
		{"force: unmarked claims are left alone", force, []string{"", "65", "66"}, []int{2}, nil, []string{"DeletePod demo-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := observed(c)
			o.claims = map[int]*corev1.PersistentVolumeClaim{}
			for ord, mark := range tc.marks {
				pvc := member.Claim(c, ord)
				pvc.Annotations[member.AnnotationMemberID] = mark
				o.claims[ord] = pvc
			}
			for _, ord := range tc.flagged {
				o.claims[ord].Annotations[member.AnnotationRemoved] = tc.marks[ord]
			}
			f := &fakeActor{err: tc.err}
			r := &Reconciler{deps: Deps{Log: quietLog()}, control: f}
			_, err := r.act(context.Background(), c, o, plan.Decision{Action: &tc.action, Message: "why"})
			if (err != nil) != (tc.err != nil) {
				t.Errorf("act: %v, want an error: %v", err, tc.err != nil)
			}
			if fmt.Sprint(f.calls) != fmt.Sprint(tc.want) {
				t.Errorf("calls %q, want %q", f.calls, tc.want)
			}
		})
	}
}

// A claim flagged as its member's removed has the flag taken back, before anything is planned,
// when etcd's member list lists that member: its removal never happened. A flagged member etcd
// does not list keeps it; a flag that cannot be taken back fails the pass.
func TestSyncClaimsUnflagsListedMembers(t *testing.T) {
	c := newCluster(3)
	c.Spec.Storage = member.DefaultStorage()
	unflag := func(ord int) string {
		return fmt.Sprintf("SetClaimAnnotation data-demo-%d %s=", ord, member.AnnotationRemoved)
	}
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"the listed member's flag goes, the unlisted one's stays", nil, []string{unflag(0)}},
		{"the write fails: the pass fails", errors.New("boom"), []string{unflag(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := observed(c)
			for ord := range 2 {
				o.members = append(o.members, etcdutil.Member{ID: uint64(100 + ord), Name: member.Name(c.Name, ord),
					PeerURLs: []string{member.PeerURL(c, ord)}})
			}
			o.claims = map[int]*corev1.PersistentVolumeClaim{}
			for ord := range 3 {
				id := member.FormatID(uint64(100 + ord))
				pvc := member.Claim(c, ord)
				pvc.Annotations[member.AnnotationMemberID] = id
				if ord != 1 {
					pvc.Annotations[member.AnnotationRemoved] = id
				}
				o.claims[ord] = pvc
				o.pods[ord].Annotations[member.AnnotationMemberID] = id
			}
			f := &fakeActor{err: tc.err}
			r := &Reconciler{deps: Deps{Log: quietLog()}, control: f}
			err := r.syncClaims(context.Background(), c, o)
			if (err != nil) != (tc.err != nil) {
				t.Errorf("syncClaims: %v, want an error: %v", err, tc.err != nil)
			}
			if fmt.Sprint(f.calls) != fmt.Sprint(tc.want) {
				t.Errorf("calls %q, want %q", f.calls, tc.want)
			}
		})
	}
}
