//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// waitDegradedForeign waits until the cluster reports Degraded=True, reason ForeignObject,
// with a message that names each of the given objects ("Pod example-0", "Service x").
func waitDegradedForeign(f *framework.Framework, cluster string, objects ...string) {
	f.T().Helper()
	f.Eventually(cluster+" reports the foreign objects", 2*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(cluster)
		if err != nil {
			return false, err
		}
		reason, msg := c.ConditionReason("Degraded")
		if c.Condition("Degraded") != "True" || reason != "ForeignObject" {
			return false, fmt.Errorf("Degraded=%s %s: %s", c.Condition("Degraded"), reason, msg)
		}
		for _, o := range objects {
			if !strings.Contains(msg, o) {
				return false, fmt.Errorf("Degraded message %q does not name %s", msg, o)
			}
		}
		return true, nil
	})
}

// warningEvent waits for a Warning Event of the given reason on the cluster.
func warningEvent(f *framework.Framework, cluster, reason string) {
	f.T().Helper()
	f.Eventually("a "+reason+" Warning Event", time.Minute, func() (bool, error) {
		out, err := f.NS("get", "events", "--field-selector",
			"involvedObject.kind=EtcdCluster,involvedObject.name="+cluster+",type=Warning,reason="+reason, "-o", "name")
		return err == nil && strings.TrimSpace(out) != "", fmt.Errorf("events %q, %v", out, err)
	})
}

// TestForeignClientService: a Service made by hand with the name of the cluster's client
// Service is reported and left as it is; the cluster is made and runs regardless (a foreign
// Service stops no repair).
func TestForeignClientService(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	requireOperator(t, f)
	const name = "foreign"
	f.Apply(`apiVersion: v1
kind: Service
metadata:
  name: foreign-client
spec:
  selector: {app: someone-else}
  ports: [{name: http, port: 8080}]
`)
	uid := strings.TrimSpace(f.MustNS("get", "service", name+"-client", "-o", "jsonpath={.metadata.uid}"))
	f.Apply(cluster(name, "  size: 1\n"))
	waitDegradedForeign(f, name, "Service foreign-client")
	warningEvent(f, name, "ForeignObject")
	f.Eventually(name+" has its member", 3*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		return c.Status.ReadyMembers == 1 && c.Status.Size == 1, fmt.Errorf("size %d, ready %d", c.Status.Size, c.Status.ReadyMembers)
	})
	out := f.MustNS("get", "service", name+"-client", "-o",
		"jsonpath={.metadata.uid} {.spec.selector.app} {.spec.ports[0].port} {.metadata.ownerReferences}")
	if want := uid + " someone-else 8080 "; strings.TrimRight(out, " ") != strings.TrimRight(want, " ") {
		t.Errorf("the foreign Service was changed: %q, want %q", out, want)
	}
	// Deleting the foreign Service lets the operator make its own, and the report goes.
	f.Delete("service/" + name + "-client")
	f.Eventually(name+" makes its client Service and is no longer degraded", 2*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		return c.Condition("Degraded") == "False", fmt.Errorf("Degraded=%s", c.Condition("Degraded"))
	})
	owner := f.MustNS("get", "service", name+"-client", "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}")
	if owner != "EtcdCluster/"+name {
		t.Errorf("client Service owner = %q, want EtcdCluster/%s", owner, name)
	}
}

// TestOrphanedMembersAreLeftAlone: the EtcdCluster is deleted with --cascade=orphan and
// applied again. The new object (another UID) finds pods, claims and Services of its names
// that are not provably its own: it reports them and touches nothing. Every member keeps
// running, no member is removed, and every acknowledged write is still there.
func TestOrphanedMembersAreLeftAlone(t *testing.T) {
	t.Parallel()
	const name = "example"
	f, writer := runningExample(t)
	pods := podUIDs(f, name)
	ids := memberIDs(f, name)

	f.MustNS("delete", "etcdcluster", name, "--cascade=orphan", "--wait=true")
	f.Apply(exampleManifest(t))
	waitDegradedForeign(f, name, "Pod example-0", "Pod example-1", "Pod example-2", "Service example-client")
	warningEvent(f, name, "ForeignObject")
	writer.WaitAcked(5, time.Minute)

	// The pods are the same pods, none deleted or made again, and etcd still lists the
	// same three members, all healthy.
	if now := podUIDs(f, name); fmt.Sprint(now) != fmt.Sprint(pods) {
		t.Errorf("member pods changed: %v, were %v", now, pods)
	}
	f.WaitEtcdHealthy(name+"-0", 3, time.Minute)
	list, err := f.MemberList(name + "-0")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		if want, ok := ids[m.Name]; !ok || want != fmt.Sprintf("%x", m.ID) {
			t.Errorf("member %s (%x) is not one of the members before the orphaning %v", m.Name, m.ID, ids)
		}
	}
	if len(list) != 3 {
		t.Errorf("%d members listed, want the same 3", len(list))
	}
	c, err := f.GetEtcdCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.Phase != "Degraded" {
		t.Errorf("phase %s, want Degraded", c.Status.Phase)
	}
	writer.StopAndVerify(name + "-0")
}
