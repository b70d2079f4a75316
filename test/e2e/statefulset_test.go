//go:build e2e

// Package e2e holds the end-to-end tests, run against a real cluster by make e2e.
package e2e

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
