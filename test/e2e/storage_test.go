//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

const pvcManifest = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 16Mi}}
`

// podManifest mounts the claim "data"; the container writes nothing by itself.
const podManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: user
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: docker.io/library/busybox:1.35.0
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
`

// TestDefaultStorageClassPVC checks what the operator's members rely on: a PVC
// with no storageClassName is bound by the cluster's default StorageClass, and a
// file written through it outlives the pod.
func TestDefaultStorageClassPVC(t *testing.T) {
	t.Parallel()
	f := framework.New(t)

	f.Apply(pvcManifest)
	f.Apply(podManifest)
	f.WaitFor("pvc/data", "jsonpath={.status.phase}=Bound", 2*time.Minute)
	f.WaitFor("pod/user", "condition=Ready", 2*time.Minute)

	var pvc struct {
		Spec struct {
			StorageClassName string `json:"storageClassName"`
		} `json:"spec"`
	}
	if err := f.GetJSON("pvc/data", &pvc); err != nil {
		t.Fatal(err)
	}
	classes := f.MustKubectl("get", "storageclass", "-o",
		`jsonpath={range .items[?(@.metadata.annotations.storageclass\.kubernetes\.io/is-default-class=="true")]}{.metadata.name}{"\n"}{end}`)
	if pvc.Spec.StorageClassName == "" || !strings.Contains("\n"+classes, "\n"+pvc.Spec.StorageClassName+"\n") {
		t.Fatalf("pvc/data got storageClassName %q, default classes: %q", pvc.Spec.StorageClassName, classes)
	}

	if _, err := f.Exec("user", "c", "sh", "-c", "echo kept > /data/file && sync"); err != nil {
		t.Fatal(err)
	}
	f.MustNS("delete", "pod/user", "--wait=true", "--timeout=60s")
	f.Apply(podManifest)
	f.WaitFor("pod/user", "condition=Ready", 2*time.Minute)
	out, err := f.Exec("user", "c", "cat", "/data/file")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "kept" {
		t.Fatalf("/data/file after the pod was recreated = %q, want %q", out, "kept")
	}
}
