package framework

import (
	"fmt"
	"strings"
)

// APIGroup is the operator's API group (pkg/apis/etcd/v1alpha1.GroupName); its
// objects in the test namespace are dumped as YAML.
const APIGroup = "etcd.operator.dev"

// Dump logs what explains a failure: the operator's logs (current and previous
// containers of every pod in etcd-operator-system), the test namespace's events
// in time order, its pods with `get -o wide` and `describe`, every container's logs of
// those pods (the install-member-init and etcd containers, previous runs included), and
// its other objects. Each section is fetched independently; a failing fetch is reported
// in place and does not hide the others.
func (f *Framework) Dump() {
	f.t.Helper()
	section := func(title string, args ...string) {
		out, err := f.Kubectl(args...)
		if err != nil {
			out += "\n(" + err.Error() + ")"
		}
		f.t.Logf("===== %s =====\n%s", title, strings.TrimRight(out, "\n"))
	}
	// podLogs logs every container of a pod, then the previous run of any that restarted.
	podLogs := func(title, namespace, pod string, tail int) {
		args := []string{"-n", namespace, "logs", pod, "--all-containers", "--prefix", "--timestamps"}
		section(title+" "+pod, append(args, fmt.Sprintf("--tail=%d", tail))...)
		if out, err := f.Kubectl(append(args, "--previous", "--tail=100")...); err == nil && strings.TrimSpace(out) != "" {
			f.t.Logf("===== %s %s (previous containers) =====\n%s", title, pod, strings.TrimRight(out, "\n"))
		}
	}
	ns := f.Namespace
	f.t.Logf("===== DUMP of namespace %s after failure of %s =====", ns, f.t.Name())

	if pods, err := f.Kubectl("-n", OperatorNamespace, "get", "pods", "-o", "name"); err != nil {
		f.t.Logf("===== operator logs: none (%v) =====", err)
	} else if strings.TrimSpace(pods) == "" {
		f.t.Logf("===== operator logs: no pod in %s =====", OperatorNamespace)
	} else {
		section("operator pods", "-n", OperatorNamespace, "get", "pods", "-o", "wide")
		for _, p := range strings.Fields(pods) {
			podLogs("operator logs", OperatorNamespace, p, 300)
		}
	}
	section("events in "+ns, "-n", ns, "get", "events", "--sort-by=.lastTimestamp",
		"-o", "custom-columns=LAST:.lastTimestamp,TYPE:.type,REASON:.reason,KIND:.involvedObject.kind,OBJECT:.involvedObject.name,MESSAGE:.message")
	section("pods in "+ns, "-n", ns, "get", "pods", "-o", "wide")
	section("describe pods in "+ns, "-n", ns, "describe", "pods")
	if pods, err := f.Kubectl("-n", ns, "get", "pods", "-o", "name"); err == nil {
		for _, p := range strings.Fields(pods) {
			podLogs("logs", ns, p, 200)
		}
	}
	section("objects in "+ns, "-n", ns, "get", "all,pvc,configmaps", "-o", "wide")
	if out, err := f.Kubectl("api-resources", "--api-group="+APIGroup, "-o", "name"); err == nil && strings.TrimSpace(out) != "" {
		for _, r := range strings.Fields(out) {
			section(r+" in "+ns, "-n", ns, "get", r, "-o", "yaml")
		}
	}
}
