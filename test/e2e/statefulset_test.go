//go:build e2e

// Package e2e holds the end-to-end tests, run against a real cluster by make e2e.
package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// etcdStatefulSet is the plain way to run a 3-member etcd on Kubernetes, without
// any operator: a headless Service that publishes not-ready addresses (peers must
// resolve each other before they are healthy), a StatefulSet with parallel pod
// management, and a PVC per member from the default StorageClass. The etcd image
// has no shell: the pod spec passes flags only, with $(VAR) expanded by the kubelet.
const etcdStatefulSet = `
apiVersion: v1
kind: Service
metadata:
  name: etcd
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {app: etcd-floor}
  ports:
  - {name: client, port: 2379}
  - {name: peer, port: 2380}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: etcd
spec:
  serviceName: etcd
  replicas: 3
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app: etcd-floor}
  template:
    metadata:
      labels: {app: etcd-floor}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: etcd
        image: gcr.io/etcd-development/etcd:v3.6.16
        imagePullPolicy: IfNotPresent
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        - name: NAMESPACE
          valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
        - {name: SVC, value: "etcd.$(NAMESPACE).svc"}
        command:
        - /usr/local/bin/etcd
        - --name=$(POD_NAME)
        - --data-dir=/var/lib/etcd/data
        - --listen-client-urls=http://0.0.0.0:2379
        - --advertise-client-urls=http://$(POD_NAME).$(SVC):2379
        - --listen-peer-urls=http://0.0.0.0:2380
        - --initial-advertise-peer-urls=http://$(POD_NAME).$(SVC):2380
        - --initial-cluster=etcd-0=http://etcd-0.$(SVC):2380,etcd-1=http://etcd-1.$(SVC):2380,etcd-2=http://etcd-2.$(SVC):2380
        - --initial-cluster-state=new
        - --initial-cluster-token=$(NAMESPACE)
        ports:
        - {containerPort: 2379, name: client}
        - {containerPort: 2380, name: peer}
        readinessProbe:
          httpGet: {path: /health, port: 2379}
          periodSeconds: 2
          failureThreshold: 3
        volumeMounts:
        - {name: data, mountPath: /var/lib/etcd}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 64Mi}}
`

// TestStatefulSetFloor is the physical floor the operator's speed is compared
// with: how long a plain 3-member etcd StatefulSet takes from kubectl apply to a
// healthy cluster on this cluster (CoreDNS with its default 30 s cache), and that
// a key survives the deletion of a member pod. Keep it.
func TestStatefulSetFloor(t *testing.T) {
	t.Parallel()
	f := framework.New(t)

	start := time.Now()
	f.Apply(etcdStatefulSet)
	f.WaitEtcdHealthy("etcd-0", 3, 3*time.Minute)
	healthy := time.Since(start)
	t.Logf("FLOOR: plain 3-member etcd StatefulSet apply -> healthy (3 started members, endpoint health --cluster) in %.1fs", healthy.Seconds())
	f.WaitFor("statefulset/etcd", "jsonpath={.status.readyReplicas}=3", 2*time.Minute)
	t.Logf("FLOOR: apply -> 3 pods Ready in %.1fs", time.Since(start).Seconds())

	if out, err := f.Etcdctl("etcd-0", "put", "floor-key", "survives"); err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("put: %q %v", out, err)
	}

	var pod struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	if err := f.GetJSON("pod/etcd-1", &pod); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	f.Delete("pod/etcd-1")
	f.Eventually("etcd-1 to be recreated", 2*time.Minute, func() (bool, error) {
		var p struct {
			Metadata struct{ UID string } `json:"metadata"`
		}
		if err := f.GetJSON("pod/etcd-1", &p); err != nil {
			return false, err
		}
		return p.Metadata.UID != "" && p.Metadata.UID != pod.Metadata.UID, nil
	})
	f.WaitFor("pod/etcd-1", "condition=Ready", 2*time.Minute)
	f.WaitEtcdHealthy("etcd-1", 3, 2*time.Minute)
	t.Logf("FLOOR: member pod deleted -> recreated and cluster healthy in %.1fs", time.Since(deleted).Seconds())

	// a serializable read answers from etcd-1's own store: the key is in the recreated member
	out, err := f.Etcdctl("etcd-1", "get", "floor-key", "--print-value-only", "--consistency=s")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != "survives" {
		t.Fatalf("floor-key on the recreated etcd-1 = %q, want %q", got, "survives")
	}
}
