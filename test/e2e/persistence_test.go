//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// uidsByName are the UIDs of the cluster's objects of a resource (pods, pvc), by name.
func uidsByName(f *framework.Framework, resource, cluster string) map[string]string {
	f.T().Helper()
	return fieldByName(f, resource, cluster, ".metadata.uid")
}

// fieldByName is one field (a jsonpath without braces, of a value with no spaces) of each of
// a cluster's objects of a resource, by object name.
func fieldByName(f *framework.Framework, resource, cluster, field string) map[string]string {
	f.T().Helper()
	out := f.MustNS("get", resource, "-l", "etcd.operator.dev/cluster="+cluster, "-o",
		`jsonpath={range .items[*]}{.metadata.name}={`+field+`}{"\n"}{end}`)
	uids := map[string]string{}
	for _, line := range strings.Fields(out) {
		name, uid, _ := strings.Cut(line, "=")
		uids[name] = uid
	}
	return uids
}

// claimUIDs are the UIDs of the cluster's claims, by claim name.
func claimUIDs(f *framework.Framework, cluster string) map[string]string {
	return uidsByName(f, "pvc", cluster)
}

// podUIDs are the UIDs of the member pods of a cluster, by name.
func podUIDs(f *framework.Framework, cluster string) map[string]string {
	return uidsByName(f, "pods", cluster)
}

// podImages are the etcd images of the member pods of a cluster, by name.
func podImages(f *framework.Framework, cluster string) map[string]string {
	return fieldByName(f, "pods", cluster, `.spec.containers[?(@.name=="etcd")].image`)
}

// memberIDs are the member IDs status reports, by member name.
func memberIDs(f *framework.Framework, cluster string) map[string]string {
	f.T().Helper()
	c, err := f.GetEtcdCluster(cluster)
	if err != nil {
		f.T().Fatal(err)
	}
	ids := map[string]string{}
	for _, m := range c.Status.Members {
		ids[m.Name] = m.ID
	}
	return ids
}

// waitSameMembers waits until the cluster is in spec with n members, each with the ID it had,
// and each pod of oldPods (UIDs by name) recreated.
func waitSameMembers(f *framework.Framework, cluster string, ids, oldPods map[string]string, n int) {
	f.T().Helper()
	f.Eventually(fmt.Sprintf("%s back with the same %d members", cluster, n), 3*time.Minute, func() (bool, error) {
		now := podUIDs(f, cluster)
		for pod, uid := range oldPods {
			if now[pod] == "" || now[pod] == uid {
				return false, fmt.Errorf("pod %s not recreated yet", pod)
			}
		}
		c, err := f.GetEtcdCluster(cluster)
		if err != nil {
			return false, err
		}
		for name, id := range ids {
			if got := c.MemberID(name); got != id {
				return false, fmt.Errorf("member %s id %q, want %s", name, got, id)
			}
		}
		return c.InSpec(n)
	})
}

// TestRestartInPlace: members keep their data on claims (the default storage). A deleted
// member pod comes back as the same member; so does every member when all their pods (and the
// operator's) are deleted at once. A member whose claim goes with its pod is replaced. The
// cluster deleted and applied again comes back on its claims. Nothing acknowledged is lost.
func TestRestartInPlace(t *testing.T) {
	t.Parallel()
	const name = "example"
	f, writer := runningExample(t)
	c, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Status.Members {
		if m.Claim != "data-"+m.Name {
			t.Errorf("status.members: %s keeps its data on %q, want claim data-%s", m.Name, m.Claim, m.Name)
		}
	}
	claims := claimUIDs(f, name)
	if len(claims) != 3 {
		t.Fatalf("claims %v, want data-%s-0..2", claims, name)
	}
	ids := memberIDs(f, name)

	pods := podUIDs(f, name)
	f.Delete("pod/" + name + "-1")
	waitSameMembers(f, name, ids, map[string]string{name + "-1": pods[name+"-1"]}, 3)
	writer.WaitAcked(5, time.Minute)

	// Every member pod at once, and the operator: quorum is gone until the members are back,
	// on their data.
	pods = podUIDs(f, name)
	f.MustNS("delete", "pod", "-l", "etcd.operator.dev/cluster="+name, "--wait=false")
	f.MustKubectl("-n", framework.OperatorNamespace, "delete", "pod", "-l", "app.kubernetes.io/name=etcd-operator", "--wait=false")
	waitSameMembers(f, name, ids, pods, 3)
	writer.WaitAcked(5, time.Minute)
	if after := claimUIDs(f, name); fmt.Sprint(after) != fmt.Sprint(claims) {
		t.Errorf("claims changed across the restarts: %v, were %v", after, claims)
	}

	// A claim deleted with its pod: that member's data is gone. It is replaced (a new member
	// under the same name, on a new claim); the others keep every key.
	f.MustNS("delete", "pvc", "data-"+name+"-2", "--wait=false")
	f.MustNS("delete", "pod", name+"-2", "--wait=false")
	waitReplaced(f, name, name+"-2", ids[name+"-2"])
	if uid := claimUIDs(f, name)["data-"+name+"-2"]; uid == "" || uid == claims["data-"+name+"-2"] {
		t.Errorf("claim data-%s-2 uid %q (was %s): want a new claim", name, uid, claims["data-"+name+"-2"])
	}
	writer.WaitAcked(5, time.Minute)
	ids = memberIDs(f, name)
	log := writer.Stop()

	// Deleted with whenDeleted Retain (the default): the claims stay, and applying the
	// cluster again brings the same members back with every key.
	f.Delete("etcdcluster/" + name)
	f.Eventually("member pods gone", 2*time.Minute, func() (bool, error) {
		out, err := f.NS("get", "pods", "-l", "etcd.operator.dev/cluster="+name, "-o", "name")
		return err == nil && strings.TrimSpace(out) == "", fmt.Errorf("pods %q, %v", out, err)
	})
	if kept := claimUIDs(f, name); len(kept) != 3 {
		t.Fatalf("claims after deleting the cluster: %v, want all three kept", kept)
	}
	f.Apply(exampleManifest(t))
	waitSameMembers(f, name, ids, nil, 3)
	writer.Verify(log, name+"-0")
}

// TestClaimsFollowScaling: with whenScaled Retain a scale-down keeps the removed member's
// claim, and a claim kept that way is replaced by an empty one before its ordinal joins again
// (etcd refuses to start a removed member's data). (Delete, the default, is in
// TestClusterLifecycle.) Then a claim deleted under its running member, and a volume wiped
// by hand under another: each member is replaced. Last, with whenDeleted Delete, the claims
// go with the cluster.
func TestClaimsFollowScaling(t *testing.T) {
	t.Parallel()
	const name = "example"
	f, writer := runningExample(t)

	f.Patch("etcdcluster/"+name, `{"spec":{"storage":{"retentionPolicy":{"whenScaled":"Retain"}}}}`)
	f.Scale("etcdcluster/"+name, 4)
	f.WaitClusterInSpec(name, 4, 3*time.Minute)
	removedID := memberIDs(f, name)[name+"-3"]
	f.Scale("etcdcluster/"+name, 3)
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	kept := claimUIDs(f, name)["data-"+name+"-3"]
	if kept == "" {
		t.Fatalf("whenScaled Retain: claim data-%s-3 deleted by the scale-down", name)
	}
	f.Scale("etcdcluster/"+name, 4)
	f.WaitClusterInSpec(name, 4, 3*time.Minute)
	if uid := claimUIDs(f, name)["data-"+name+"-3"]; uid == kept || uid == "" {
		t.Errorf("claim data-%s-3 kept with the removed member's data (uid %s, was %s): want it replaced before reuse", name, uid, kept)
	}
	if id := memberIDs(f, name)[name+"-3"]; id == removedID {
		t.Errorf("%s-3 came back with the removed member's ID %s", name, id)
	}

	// A claim deleted by hand under its running member: the claim waits for its pod to go
	// (pvc-protection); the member is replaced on a new claim.
	oldID := memberIDs(f, name)[name+"-1"]
	oldClaim := claimUIDs(f, name)["data-"+name+"-1"]
	f.MustNS("delete", "pvc", "data-"+name+"-1", "--wait=false")
	replacedOnNewClaim := func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		if id := c.MemberID(name + "-1"); id == "" || id == oldID {
			return false, fmt.Errorf("member %s-1 id %q (was %s)", name, id, oldID)
		}
		if uid := claimUIDs(f, name)["data-"+name+"-1"]; uid == "" || uid == oldClaim {
			return false, fmt.Errorf("claim data-%s-1 uid %q (was %s)", name, uid, oldClaim)
		}
		return c.InSpec(4)
	}
	f.Eventually(name+"-1 replaced on a new claim", 3*time.Minute, replacedOnNewClaim)

	// A volume wiped by hand under its running member (a pod beside it empties the claim),
	// then the member's pod restarted: member-init finds the data dir of a started member
	// empty and refuses to start etcd on it, and the member is replaced.
	wipedID := memberIDs(f, name)[name+"-2"]
	f.RunOnClaim("wipe", "data-"+name+"-2", false, `rm -rf /data/* /data/.[!.]* && test -z "$(ls -A /data)"`)
	f.MustNS("delete", "pod", name+"-2", "--wait=false")
	f.Eventually(name+"-2 replaced after its volume was wiped", 3*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		if id := c.MemberID(name + "-2"); id == "" || id == wipedID {
			return false, fmt.Errorf("member %s-2 id %q (was %s)", name, id, wipedID)
		}
		return c.InSpec(4)
	})
	writer.StopAndVerify(name + "-0")

	// whenDeleted Delete (the policy may change at any time): the claims go with the cluster,
	// once the operator has put its finalizer on it.
	f.Patch("etcdcluster/"+name, `{"spec":{"storage":{"retentionPolicy":{"whenDeleted":"Delete"}}}}`)
	waitClaimsFinalizer(f, name, true)
	f.MustNS("delete", "etcdcluster", name, "--wait=false")
	f.Eventually("the claims gone with the cluster (whenDeleted Delete)", 3*time.Minute, func() (bool, error) {
		left := claimUIDs(f, name)
		return len(left) == 0, fmt.Errorf("claims left: %v", left)
	})
}

// TestClaimThatCannotBind: a StorageClass that does not exist leaves the seed's claim
// waiting; the cluster says so, with the claim's event. Fixing the spec of a cluster that
// never started is allowed, and the cluster then starts.
func TestClaimThatCannotBind(t *testing.T) {
	t.Parallel()
	const name = "example"
	f := framework.New(t)
	requireOperator(t, f)
	f.Apply(strings.TrimRight(exampleManifest(t), "\n") + `
  storage:
    volumeClaimTemplate:
      spec:
        storageClassName: no-such-class
        resources: {requests: {storage: 512Mi}}
`)
	f.Eventually("Degraded names the waiting claim", 2*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		reason, msg := c.ConditionReason("Degraded")
		return reason == "ClaimPending" && strings.Contains(msg, "data-"+name+"-0") && strings.Contains(msg, "no-such-class"),
			fmt.Errorf("Degraded %s: %s", reason, msg)
	})
	f.Patch("etcdcluster/"+name, `{"spec":{"storage":{"volumeClaimTemplate":{"spec":{"storageClassName":null}}}}}`)
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
}

// loseData deletes the claims and pods of the given members: their data is gone, all at once,
// as when their nodes' disks die together. The cluster is paused meanwhile: a member whose
// claim is deleted while its etcd still answers (its pod stopping) is otherwise removed by
// the operator, one at a time while quorum holds, and the majority is never lost at all.
func loseData(f *framework.Framework, cluster string, members ...string) {
	f.T().Helper()
	var claims, pods []string
	for _, m := range members {
		claims = append(claims, "pvc/data-"+m)
		pods = append(pods, "pod/"+m)
	}
	f.Patch("etcdcluster/"+cluster, `{"spec":{"paused":true}}`)
	f.MustNS(append([]string{"delete", "--wait=false"}, claims...)...)
	f.MustNS(append([]string{"delete", "--timeout=3m"}, pods...)...)
	f.Patch("etcdcluster/"+cluster, `{"spec":{"paused":false}}`)
}

// waitQuorumLost waits until the cluster reports QuorumLost naming its survivor.
func waitQuorumLost(f *framework.Framework, cluster, survivor string) string {
	f.T().Helper()
	var msg string
	f.Eventually("QuorumLost reported", 2*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(cluster)
		if err != nil {
			return false, err
		}
		var reason string
		reason, msg = c.ConditionReason("Degraded")
		return reason == "QuorumLost" && strings.Contains(msg, survivor+" (raft index"), fmt.Errorf("Degraded %s: %s", reason, msg)
	})
	return msg
}

// TestQuorumLoss: two of three members lose their data for good (claims and pods deleted).
// With spec.recovery.quorumLoss Manual (the default) the cluster reports QuorumLost, names
// the survivor and its raft index, and waits; the annotation recovers it from the survivor,
// which keeps every acknowledged write, and it grows back to three. With FromSurvivor (grace
// 0) the same happens unattended.
func TestQuorumLoss(t *testing.T) {
	t.Parallel()
	const name = "example"
	f, writer := runningExample(t)
	log := writer.Stop()
	writer.WaitApplied(log, name+"-0")
	survivorID := memberIDs(f, name)[name+"-0"]

	loseData(f, name, name+"-1", name+"-2")
	msg := waitQuorumLost(f, name, name+"-0")
	if !strings.Contains(msg, "kubectl annotate etcdcluster -n "+f.Namespace+" "+name+" etcd.operator.dev/recover-quorum="+name+"-0") {
		t.Errorf("QuorumLost message %q does not give the command that recovers", msg)
	}
	// Manual: nothing happens without the annotation.
	if c, err := f.GetEtcdCluster(name); err != nil || c.MemberID(name+"-0") != survivorID {
		t.Fatalf("survivor changed before anyone asked: %v", err)
	}
	f.MustNS("annotate", "etcdcluster", name, "etcd.operator.dev/recover-quorum="+name+"-0")
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	if id := memberIDs(f, name)[name+"-0"]; id != survivorID {
		t.Errorf("survivor %s-0 has ID %s, was %s: it must keep its member ID", name, id, survivorID)
	}
	if out := f.MustNS("get", "etcdcluster", name, "-o", "jsonpath={.metadata.annotations}"); strings.Contains(out, "recover-quorum") {
		t.Errorf("the recover-quorum annotation is left after recovering: %s", out)
	}
	writer.Verify(log, name+"-0")

	// FromSurvivor, no grace: recovered unattended, from the member with the highest index.
	f.Patch("etcdcluster/"+name, `{"spec":{"recovery":{"quorumLoss":"FromSurvivor","gracePeriodSeconds":0}}}`)
	writer = f.StartWriter(name)
	writer.WaitAcked(5, time.Minute)
	log = writer.Stop()
	writer.WaitApplied(log, name+"-1")
	survivorID = memberIDs(f, name)[name+"-1"]
	loseData(f, name, name+"-0", name+"-2")
	f.Eventually("a QuorumRecovery event naming the survivor", 2*time.Minute, func() (bool, error) {
		events, err := f.NS("get", "events", "--field-selector", "reason=QuorumRecovery", "-o", "jsonpath={.items[*].message}")
		return err == nil && strings.Contains(events, name+"-1"), fmt.Errorf("QuorumRecovery events %q, %v", events, err)
	})
	f.WaitClusterInSpec(name, 3, 3*time.Minute)
	if id := memberIDs(f, name)[name+"-1"]; id != survivorID {
		t.Errorf("survivor %s-1 has ID %s, was %s: it must keep its member ID", name, id, survivorID)
	}
	writer.Verify(log, name+"-1")
}
