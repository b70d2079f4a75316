package framework

import (
	"fmt"
	"time"
)

// RunOnClaim runs script with busybox's sh in a pod of the test's namespace named pod, with
// claim mounted at /data (read-only when readOnly), as an unprivileged user of the etcd
// image's uid, the way a user looks into or damages a volume by hand. It waits for the pod
// to succeed, returns what it printed, and deletes it (waiting until it is gone: a claim is
// in use by every pod scheduled with it, finished or not).
func (f *Framework) RunOnClaim(pod, claim string, readOnly bool, script string) string {
	f.t.Helper()
	f.Apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    fsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: sh
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts: [{name: data, mountPath: /data, readOnly: %t}]
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
  volumes: [{name: data, persistentVolumeClaim: {claimName: %s, readOnly: %t}}]
`, pod, WriterImage, script, readOnly, claim, readOnly))
	f.WaitFor("pod/"+pod, "jsonpath={.status.phase}=Succeeded", 2*time.Minute)
	out := f.MustNS("logs", pod)
	f.MustNS("delete", "pod", pod, "--wait=true", "--timeout=60s")
	return out
}
