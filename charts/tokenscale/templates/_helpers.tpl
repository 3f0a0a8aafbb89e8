{{- define "tokenscale.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "tokenscale.labels" -}}
app.kubernetes.io/name: tokenscale
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: operator
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tokenscale.selector" -}}
app.kubernetes.io/name: tokenscale
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tokenscale.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "tokenscale.fullname" .) .Values.serviceAccount.name }}
{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{/* The namespaced rules: every call of the reconcile (operator/tokenscale/kube/rbac.py). */}}
{{- define "tokenscale.namespacedRules" -}}
- apiGroups: ["tokenscale.io"]
  resources: ["inferenceservices"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["tokenscale.io"]
  resources: ["inferenceservices/status"]
  verbs: ["get", "update"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["leaderworkerset.x-k8s.io"]
  resources: ["leaderworkersets"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "patch"]
{{- /* spec.scaling.actuation keda: the ScaledObject is read, applied, deleted (never watched) */}}
- apiGroups: ["keda.sh"]
  resources: ["scaledobjects"]
  verbs: ["get", "create", "patch", "delete"]
{{- /* spec.gateway.inferencePool.endpointPicker: the InferencePool is read and applied (never watched) */}}
- apiGroups: ["inference.networking.k8s.io"]
  resources: ["inferencepools"]
  verbs: ["get", "create", "patch"]
{{- /* spec.workload.classes with spec.gateway.inferencePool: one InferenceObjective per class, listed to delete a dropped class's */}}
- apiGroups: ["llm-d.ai"]
  resources: ["inferenceobjectives"]
  verbs: ["get", "list", "create", "patch", "delete"]
{{- /* spec.workloadRef: read the referenced workload, write replicas only through /scale */}}
- apiGroups: ["apps"]
  resources: ["deployments/scale"]
  verbs: ["get", "patch"]
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get"]
- apiGroups: ["apps"]
  resources: ["statefulsets/scale"]
  verbs: ["get", "patch"]
- apiGroups: ["leaderworkerset.x-k8s.io"]
  resources: ["leaderworkersets/scale"]
  verbs: ["get", "patch"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- /* get only: the ConfigMaps spec.profileRef and spec.model.hfConfigRef name */}}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch", "patch"]
- apiGroups: [""]
  resources: ["resourcequotas"]
  verbs: ["list", "watch"]
{{- if .Values.rbac.readSecrets }}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- end }}
{{- end -}}


{{/* The operator units: one per shard, or the single unsharded operator. Each is
     {name, sa, shard, namespaces, elect}; a namespace in two shards fails the render. */}}
{{- define "tokenscale.units" -}}
{{- $full := include "tokenscale.fullname" . -}}
{{- $units := list -}}
{{- if .Values.shards -}}
{{- if .Values.watchNamespaces -}}
{{- fail "shards and watchNamespaces exclude each other: list each shard's namespaces under shards" -}}
{{- end -}}
{{- $owner := dict -}}
{{- range .Values.shards -}}
{{- $shard := .name -}}
{{- range .namespaces -}}
{{- if hasKey $owner . -}}
{{- fail (printf "shards: namespace %s is in shard %s and shard %s; a namespace belongs to one shard" . (get $owner .) $shard) -}}
{{- end -}}
{{- $_ := set $owner . $shard -}}
{{- end -}}
{{- $name := printf "%s-%s" $full .name | trunc 63 | trimSuffix "-" -}}
{{- $sa := ternary $name (default "default" $.Values.serviceAccount.name) $.Values.serviceAccount.create -}}
{{- $units = append $units (dict "name" $name "sa" $sa "shard" .name "namespaces" .namespaces "elect" true) -}}
{{- end -}}
{{- else -}}
{{- $units = append $units (dict "name" $full "sa" (include "tokenscale.serviceAccountName" .) "shard" "" "namespaces" .Values.watchNamespaces "elect" (gt (int .Values.replicaCount) 1)) -}}
{{- end -}}
{{- toJson $units -}}
{{- end -}}
