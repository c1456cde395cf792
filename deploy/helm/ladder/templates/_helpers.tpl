{{/* The release's name prefix of every object: the release name, with "-ladder" unless it says so. */}}
{{- define "ladder.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries; "component" names the process (read, ingest, control, valkey). */}}
{{- define "ladder.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: ladder
{{ include "ladder.selectorLabels" . }}
{{- end -}}

{{/* The labels that select one component's pods (never change them: selectors are immutable). */}}
{{- define "ladder.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "ladder.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "ladder.secretName" -}}
{{- required "secrets.existingSecret is required: the name of a Secret holding the admin key (see the chart's README: kubectl create secret generic ladder --from-literal=admin-key=...)" .Values.secrets.existingSecret -}}
{{- end -}}

{{/* One environment variable from a key of the Secret; optional keys may be missing from it. */}}
{{- define "ladder.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "ladder.secretName" .root }}
      key: {{ .key }}
      optional: {{ .optional }}
{{- end -}}

{{/* The store's AUTH token, wherever a component connects to the store. */}}
{{- define "ladder.storePasswordEnv" -}}
{{ include "ladder.secretEnv" (dict "root" . "name" "LADDER_REDIS_PASSWORD" "key" .Values.secrets.storePasswordKey "optional" true) }}
{{- end -}}

{{/* The collector's headers (an auth token, say), where spans are exported. */}}
{{- define "ladder.otlpHeadersEnv" -}}
{{ include "ladder.secretEnv" (dict "root" . "name" "OTEL_EXPORTER_OTLP_HEADERS" "key" .Values.secrets.otlpHeadersKey "optional" true) }}
{{- end -}}

{{/* The book store's URL: the in-chart Valkey's Service, or store.url. */}}
{{- define "ladder.storeUrl" -}}
{{- if .Values.valkey.enabled -}}
redis://{{ include "ladder.fullname" . }}-valkey:{{ .Values.valkey.port }}/0
{{- else -}}
{{- required "store.url is required when valkey.enabled is false" .Values.store.url -}}
{{- end -}}
{{- end -}}

{{/* What every component's ConfigMap holds: where the stores are, and OpenTelemetry. */}}
{{- define "ladder.commonConfig" -}}
LADDER_REDIS_URL: {{ include "ladder.storeUrl" . | quote }}
LADDER_REDIS_CLUSTER: {{ and .Values.store.cluster (not .Values.valkey.enabled) | quote }}
{{- with .Values.store.controlUrl }}
LADDER_CONTROL_REDIS_URL: {{ . | quote }}
{{- end }}
{{- with .Values.otel.endpoint }}
OTEL_EXPORTER_OTLP_ENDPOINT: {{ . | quote }}
{{- end }}
{{- with .Values.otel.metricsExporter }}
OTEL_METRICS_EXPORTER: {{ . | quote }}
{{- end }}
{{- with .Values.otel.tracesSampler }}
OTEL_TRACES_SAMPLER: {{ . | quote }}
{{- end }}
{{- with .Values.otel.tracesSamplerArg }}
OTEL_TRACES_SAMPLER_ARG: {{ . | quote }}
{{- end }}
{{- $attributes := list (printf "k8s.namespace.name=%s" .Release.Namespace) }}
{{- with .Values.otel.environment }}
{{- $attributes = append $attributes (printf "deployment.environment=%s" .) }}
{{- end }}
OTEL_RESOURCE_ATTRIBUTES: {{ join "," $attributes | quote }}
{{- end -}}

{{/* The probe and metrics server of ingest nodes and the control plane. */}}
{{- define "ladder.opsConfig" -}}
LADDER_METRICS_PORT: {{ .Values.ops.port | int | quote }}
LADDER_METRICS_HOST: "0.0.0.0"
LADDER_MAX_LOOP_BLOCK_S: {{ .Values.ops.maxLoopBlockSeconds | quote }}
{{- end -}}

{{- define "ladder.opsProbes" -}}
livenessProbe:
  httpGet:
    path: /livez
    port: ops
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: ops
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 3
{{- end -}}

{{/* What every Ladder container shares: the image, its security context, a writable /tmp. */}}
{{- define "ladder.containerBase" -}}
image: {{ include "ladder.image" . | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - name: tmp
    mountPath: /tmp
{{- end -}}

{{- define "ladder.podBase" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
volumes:
  - name: tmp
    emptyDir: {}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "ladder.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Spread one component's pods over Kubernetes nodes where the scheduler can. */}}
{{- define "ladder.spread" -}}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "ladder.selectorLabels" . | nindent 8 }}
{{- end -}}
