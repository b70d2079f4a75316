{{/*
The name of the release's objects: the release's name when it contains the chart's, else
<release>-etcd-operator; at most 63 characters.
*/}}
{{- define "etcd-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The labels that select the operator's pods. app.kubernetes.io/name is always etcd-operator:
the NetworkPolicy of a cluster with spec.networkPolicy lets pods of that label reach its
members (pkg/member/netpol.go).
*/}}
{{- define "etcd-operator.selectorLabels" -}}
app.kubernetes.io/name: etcd-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object of the release. */}}
{{- define "etcd-operator.labels" -}}
{{ include "etcd-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The operator's image; member pods copy member-init from it. */}}
{{- define "etcd-operator.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Whether the operator creates and upgrades the CRDs and the admission policy. */}}
{{- define "etcd-operator.managesCRDs" -}}
{{- if and (not .Values.namespaced) .Values.crds.managedByOperator -}}true{{- end -}}
{{- end -}}

{{/*
The rules on the operator's own kinds, in every namespace it watches. deploy/rbac/clusterrole.yaml
says why each verb is needed; deploy/chart_test.go checks that the rendered rules are those of
deploy/ and exactly what the code calls.
*/}}
{{- define "etcd-operator.rules.kinds" -}}
- apiGroups: ["etcd.operator.dev"]
  resources: ["etcdclusters"]
  verbs: ["list", "watch", "patch"]
- apiGroups: ["etcd.operator.dev"]
  resources: ["etcdclusters/status"]
  verbs: ["update"]
- apiGroups: ["etcd.operator.dev"]
  resources: ["etcdclusters/finalizers"]
  verbs: ["update"]
- apiGroups: ["etcd.operator.dev"]
  resources: ["etcdbackups"]
  verbs: ["list", "watch", "patch", "create", "delete"]
- apiGroups: ["etcd.operator.dev"]
  resources: ["etcdbackups/status"]
  verbs: ["update"]
- apiGroups: ["etcd.operator.dev"]
  resources: ["etcdbackupschedules"]
  verbs: ["list", "watch"]
- apiGroups: ["etcd.operator.dev"]
  resources: ["etcdbackupschedules/status"]
  verbs: ["update"]
{{- end -}}

{{/*
The rules on the CRDs and the admission policy the operator creates or updates at start:
create alone without names (RBAC cannot restrict create by name), the rest by name.
*/}}
{{- define "etcd-operator.rules.crds" -}}
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["create"]
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  resourceNames: ["etcdclusters.etcd.operator.dev", "etcdbackups.etcd.operator.dev", "etcdbackupschedules.etcd.operator.dev"]
  verbs: ["get", "watch", "update"]
- apiGroups: ["admissionregistration.k8s.io"]
  resources: ["mutatingadmissionpolicies", "mutatingadmissionpolicybindings"]
  verbs: ["create"]
- apiGroups: ["admissionregistration.k8s.io"]
  resources: ["mutatingadmissionpolicies", "mutatingadmissionpolicybindings"]
  resourceNames: ["etcd.operator.dev-default-peer-tls"]
  verbs: ["get", "update"]
{{- end -}}

{{/* The rules on what the clusters own: pods, claims, Services, Secrets, budgets, Leases, policies, Events. */}}
{{- define "etcd-operator.rules.owned" -}}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
- apiGroups: [""]
  resources: ["pods/eviction"]
  verbs: ["create"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch", "create", "update"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["list", "watch"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch", "create", "update"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch", "list"]
{{- end -}}

{{/* The leader election's Lease, in the operator's namespace. */}}
{{- define "etcd-operator.rules.leaderElection" -}}
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update"]
{{- end -}}
