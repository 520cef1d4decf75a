{{/*
The objects of `kubesched manifests` (src/kubesched/deploy), written as templates. tests/helm compares both
renderings for several settings: keep them the same object for object.
*/}}

{{/* Labels of a component; argument: (list $ "component"). Selectors use kubesched.selector only. */}}
{{- define "kubesched.selector" -}}
app.kubernetes.io/name: kubesched
app.kubernetes.io/component: {{ . }}
{{- end }}

{{- define "kubesched.labels" -}}
{{- $root := index . 0 -}}
{{ include "kubesched.selector" (index . 1) }}
app.kubernetes.io/part-of: kubesched
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version }}
{{- end }}

{{/* metadata of an object; argument: (dict "root" $ "name" N "component" C ["namespaced" false] ["namespace" NS]) */}}
{{- define "kubesched.metadata" -}}
metadata:
  name: {{ .name }}
  {{- if ne (toString .namespaced) "false" }}
  namespace: {{ .namespace | default .root.Release.Namespace }}
  {{- end }}
  labels:
    {{- include "kubesched.labels" (list .root .component) | nindent 4 }}
{{- end }}

{{/* A cluster-scoped (or kube-system) object's name: NAME.NAMESPACE, so two releases never share one. */}}
{{- define "kubesched.global" -}}
{{ index . 0 }}.{{ (index . 1).Release.Namespace }}
{{- end }}

{{- define "kubesched.rule" -}}
- apiGroups: [{{ .group | quote }}]
  resources: {{ .resources | toJson }}
  {{- with .names }}
  resourceNames: {{ . | toJson }}
  {{- end }}
  verbs: {{ .verbs | toJson }}
{{- end }}

{{/* A ClusterRoleBinding (no .namespace) or RoleBinding of .roleKind/.roleName to ServiceAccount .account. */}}
{{- define "kubesched.binding" -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ if .namespace }}RoleBinding{{ else }}ClusterRoleBinding{{ end }}
{{ include "kubesched.metadata" (dict "root" .root "name" .name "component" .component "namespaced" (not (empty .namespace)) "namespace" .namespace) }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ .roleKind }}
  name: {{ .roleName }}
subjects:
- kind: ServiceAccount
  name: {{ .account }}
  namespace: {{ .root.Release.Namespace }}
{{- end }}

{{- define "kubesched.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
{{ include "kubesched.metadata" (dict "root" .root "name" .name "component" .component) }}
automountServiceAccountToken: {{ .token }}
{{- end }}

{{- define "kubesched.probe" -}}
httpGet:
  path: {{ .path }}
  port: {{ .port }}
  scheme: {{ .scheme }}
initialDelaySeconds: 5
periodSeconds: {{ .period }}
timeoutSeconds: 3
failureThreshold: {{ .failures }}
{{- end }}

{{/*
A hardened one-container Deployment (k8s.deployment + k8s.Container). Argument: dict with root, name, component,
account, token, replicas, checksum (or ""), and the container: image, command (or nil), args, portName, port,
scheme, health, cpu, memory, volumes (list of dicts: name, mountPath, readOnly, source).
*/}}
{{- define "kubesched.deployment" -}}
apiVersion: apps/v1
kind: Deployment
{{ include "kubesched.metadata" (dict "root" .root "name" .name "component" .component) }}
spec:
  replicas: {{ .replicas | default 1 }}
  selector:
    matchLabels:
      {{- include "kubesched.selector" .component | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "kubesched.labels" (list .root .component) | nindent 8 }}
      {{- if .checksum }}
      annotations:
        kubesched.io/inputs-sha256: {{ .checksum }}
      {{- end }}
    spec:
      serviceAccountName: {{ .account }}
      automountServiceAccountToken: {{ .token }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        fsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      containers:
      - name: {{ .container }}
        image: {{ .image }}
        {{- with .command }}
        command: {{ . | toJson }}
        {{- end }}
        args: {{ .args | toJson }}
        ports:
        - name: {{ .portName }}
          containerPort: {{ .port }}
          protocol: TCP
        resources:
          requests:
            cpu: {{ .cpu | default "100m" }}
            memory: {{ .memory | default "128Mi" }}
          limits:
            memory: 512Mi
        livenessProbe:
          {{- include "kubesched.probe" (dict "path" (.health | default "/healthz") "port" .portName "scheme" .scheme "period" 20 "failures" 3) | nindent 10 }}
        readinessProbe:
          {{- include "kubesched.probe" (dict "path" "/readyz" "port" .portName "scheme" .scheme "period" 5 "failures" 2) | nindent 10 }}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          runAsNonRoot: true
          capabilities:
            drop: [ALL]
        {{- with .volumes }}
        volumeMounts:
        {{- range . }}
        - name: {{ .name }}
          mountPath: {{ .mountPath }}
          readOnly: {{ .readOnly }}
        {{- end }}
        {{- end }}
      {{- with .volumes }}
      volumes:
      {{- range . }}
      - {{ merge (dict "name" .name) .source | toYaml | nindent 8 | trim }}
      {{- end }}
      {{- end }}
{{- end }}

{{/* Volumes (k8s.config_volume, secret_volume, TMP). */}}
{{- define "kubesched.tmpVolume" -}}
{{ dict "name" "tmp" "mountPath" "/tmp" "readOnly" false "source" (dict "emptyDir" (dict "sizeLimit" "64Mi")) | toJson }}
{{- end }}

{{- define "kubesched.configVolume" -}}
{{ dict "name" (index . 0) "mountPath" (index . 2) "readOnly" true "source" (dict "configMap" (dict "name" (index . 1))) | toJson }}
{{- end }}

{{/* The inputs hash of a Deployment: sha256 of its ConfigMaps' and Secret's data (a change rolls the pods). */}}
{{- define "kubesched.checksum" -}}
{{ . | toJson | sha256sum }}
{{- end }}

{{/* The schedulerNames kubesched's scheduler serves: its config's profiles, else scheduler.schedulerName. */}}
{{- define "kubesched.schedulerNames" -}}
{{- $names := list -}}
{{- range (.Values.scheduler.config.profiles | default list) -}}
{{- $names = append $names (.schedulerName | default "default-scheduler") -}}
{{- end -}}
{{- if not $names }}{{ $names = list .Values.scheduler.schedulerName }}{{ end -}}
{{ $names | toJson }}
{{- end }}
