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
account, token, checksum (or ""), the container: image, command (or nil), args, portName, port, scheme, health,
volumes (list of dicts: name, mountPath, readOnly, source), and pod: the component's tunables (replicaCount,
resources, nodeSelector, tolerations, affinity, topologySpreadConstraints, priorityClassName, podAnnotations,
podLabels; values.yaml). Our labels and annotations win over podLabels/podAnnotations.
*/}}
{{- define "kubesched.deployment" -}}
{{- $pod := .pod }}
{{- $selector := include "kubesched.selector" .component | fromYaml }}
apiVersion: apps/v1
kind: Deployment
{{ include "kubesched.metadata" (dict "root" .root "name" .name "component" .component) }}
spec:
  replicas: {{ $pod.replicaCount | default 1 }}
  selector:
    matchLabels:
      {{- toYaml $selector | nindent 6 }}
  template:
    metadata:
      labels:
        {{- merge (include "kubesched.labels" (list .root .component) | fromYaml) ($pod.podLabels | default dict) | toYaml | nindent 8 }}
      {{- $annotations := deepCopy ($pod.podAnnotations | default dict) }}
      {{- if .checksum }}{{ $_ := set $annotations "kubesched.io/inputs-sha256" .checksum }}{{ end }}
      {{- with $annotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ .account }}
      automountServiceAccountToken: {{ .token }}
      {{- with $pod.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with .root.Values.imagePullSecrets }}
      imagePullSecrets:
      {{- range . }}
      - name: {{ . }}
      {{- end }}
      {{- end }}
      {{- with $pod.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $pod.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $pod.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $pod.topologySpreadConstraints }}
      {{- /* A constraint without labelSelector counts this component's pods. */}}
      topologySpreadConstraints:
      {{- range . }}
      - {{ merge (deepCopy .) (dict "labelSelector" (dict "matchLabels" $selector)) | toYaml | nindent 8 | trim }}
      {{- end }}
      {{- end }}
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
        imagePullPolicy: {{ .root.Values.image.pullPolicy }}
        {{- with .command }}
        command: {{ . | toJson }}
        {{- end }}
        args: {{ .args | toJson }}
        ports:
        - name: {{ .portName }}
          containerPort: {{ .port }}
          protocol: TCP
        {{- with $pod.resources }}
        resources:
          {{- toYaml . | nindent 10 }}
        {{- end }}
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

{{/* A PodDisruptionBudget of a component (k8s.pod_disruption_budget); argument: (list $ "component" "name"). */}}
{{- define "kubesched.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
{{ include "kubesched.metadata" (dict "root" (index . 0) "name" (index . 2) "component" (index . 1)) }}
spec:
  minAvailable: 1
  selector:
    matchLabels:
      {{- include "kubesched.selector" (index . 1) | nindent 6 }}
  {{- /* A crash-looping pod (not Ready) never blocks a node drain: it protects nothing. */}}
  unhealthyPodEvictionPolicy: AlwaysAllow
{{- end }}

{{/* The kubesched image: image.repository:tag (tag: the chart's appVersion), or @digest. */}}
{{- define "kubesched.image" -}}
{{- $i := .Values.image -}}
{{- if $i.digest -}}{{ $i.repository }}@{{ $i.digest }}
{{- else -}}{{ $i.repository }}:{{ $i.tag | default .Chart.AppVersion }}
{{- end -}}
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
