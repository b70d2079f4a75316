package member

import (
	"slices"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// Template.MaxLearners reaches etcd itself (after member-init's `--`) as --max-learners, on
// etcd 3.6 and later only: etcd 3.5 refuses to start with the flag.
func TestPodMaxLearners(t *testing.T) {
	for _, tc := range []struct {
		name        string
		version     string
		maxLearners int
		want        string
	}{
		{"3.6, asked for", "3.6.16", 2, "--max-learners=2"},
		{"3.7, asked for", "3.7.3", 2, "--max-learners=2"},
		{"3.5, asked for: etcd would refuse the flag", "3.5.21", 2, ""},
		{"not asked for", "3.6.16", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1},
				Version: tc.version, MaxLearners: tc.maxLearners}
			argv := etcdArgv(Pod(testCluster(), tmpl, "op:1").Spec.Containers[0])
			var got []string
			for _, a := range argv {
				if strings.HasPrefix(a, "--max-learners") {
					got = append(got, a)
				}
			}
			if tc.want == "" && len(got) > 0 || tc.want != "" && !slices.Equal(got, []string{tc.want}) {
				t.Errorf("etcd's command line %v: max-learners flags %v, want %q", argv, got, tc.want)
			}
		})
	}
}

// The flag is part of the pod's template, read back from the pod: a pod made without it (by an
// operator before it) stays up to date, and is not rolled for it; a pod made with it keeps it
// through an image change in place (3.6 to 3.7 and back); and a pod rolled down to 3.5 is made
// anew, without it.
func TestMaxLearnersKeepsPodsUpToDate(t *testing.T) {
	c := testCluster()
	base := Template{Ordinal: 1, ClusterState: etcdutil.ClusterStateExisting, InitialCluster: []int{0, 1, 2}, MemberID: 0xab}
	without := Pod(c, base, "op:1")
	with := base
	with.MaxLearners = 2
	flagged := Pod(c, with, "op:1")
	if RecordedHash(without) == RecordedHash(flagged) {
		t.Fatal("the flag does not change the pod's hash: the test below would prove nothing")
	}
	for name, p := range map[string]int{"made without the flag": 0, "made with it": 2} {
		pod := without
		if p != 0 {
			pod = flagged
		}
		if !UpToDate(c, pod, Target{Version: "3.6.16"}, "op:1") {
			t.Errorf("pod %s is out of date", name)
		}
	}
	image, hash, ok := ImageChange(c, flagged, Target{Version: "3.7.3"}, "op:1")
	if !ok {
		t.Fatal("3.6 to 3.7 with the flag: not an image change in place")
	}
	up := flagged.DeepCopy()
	up.Spec.Containers[0].Image, up.Annotations[AnnotationTemplateHash] = image, hash
	if tmpl, _ := ReadTemplate(c.Name, up); tmpl.MaxLearners != 2 || !UpToDate(c, up, Target{Version: "3.7.3"}, "op:1") {
		t.Errorf("after the image change to 3.7: max learners %d, up to date %v", tmpl.MaxLearners, UpToDate(c, up, Target{Version: "3.7.3"}, "op:1"))
	}
	if _, _, ok := ImageChange(c, flagged, Target{Version: "3.5.21"}, "op:1"); ok {
		t.Error("3.6 to 3.5 is an image change in place: the 3.5 member would start with --max-learners")
	}
	down := base
	down.Version, down.MaxLearners = "3.5.21", 2
	if tmpl, _ := ReadTemplate(c.Name, Pod(c, down, "op:1")); tmpl.MaxLearners != 0 {
		t.Errorf("a 3.5 pod reads back max learners %d, want none", tmpl.MaxLearners)
	}
}
