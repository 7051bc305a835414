{{/* Shared pieces of the three services' objects; no labels beyond the plain manifests'. */}}

{{- define "kube-tailor.labels" -}}
app.kubernetes.io/part-of: kube-tailor
{{- end }}

{{/* labels of a component's Deployment and pods; the argument is its name, e.g. tailor-updater */}}
{{- define "kube-tailor.componentLabels" -}}
app.kubernetes.io/name: {{ . }}
app.kubernetes.io/part-of: kube-tailor
{{- end }}

{{- define "kube-tailor.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* the schedule ConfigMap as the services' --schedule-configmap flag wants it */}}
{{- define "kube-tailor.scheduleConfigMap" -}}
{{ .Release.Namespace }}/{{ .Values.scheduleConfigMap }}
{{- end }}

{{/* pod annotations: Prometheus discovery by annotation, then the operator's; (dict "port" P "extra" MAP) */}}
{{- define "kube-tailor.podAnnotations" -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "kube-tailor.podSecurityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  seccompProfile:
    type: RuntimeDefault
{{- end }}

{{/* nodeSelector, tolerations and affinity of a component's values, when set */}}
{{- define "kube-tailor.scheduling" -}}
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
{{- end }}

{{/* the container's image lines: the image, and its pull policy when one is set */}}
{{- define "kube-tailor.containerImage" -}}
image: {{ include "kube-tailor.image" . }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{- define "kube-tailor.containerSecurityContext" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
{{- end }}

{{/* the liveness probe: restarted when no pass has finished for 5 intervals */}}
{{- define "kube-tailor.livenessProbe" -}}
livenessProbe:
  httpGet:
    path: /health-check
    port: metrics
  initialDelaySeconds: 30
  periodSeconds: 30
  failureThreshold: 3
{{- end }}

{{/* a drain takes at most one replica at a time; the argument is the component's name */}}
{{- define "kube-tailor.disruptionBudget" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  namespace: {{ .namespace }}
  labels:
    {{- include "kube-tailor.componentLabels" .name | nindent 4 }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .name }}
{{- end }}

{{/* "true" when the updater follows the forecaster's schedule; else each VPA's recommendation */}}
{{- define "kube-tailor.followsSchedule" -}}
{{- if and .Values.recommender.enabled (eq .Values.recommender.strategy "forecast") }}true{{- end }}
{{- end }}

{{/* upstream's namespace scope flags, when set (values: scope.*) */}}
{{- define "kube-tailor.scopeArgs" -}}
{{- with .Values.scope.vpaObjectNamespace }}
- --vpa-object-namespace={{ . }}
{{- end }}
{{- with .Values.scope.ignoredVpaObjectNamespaces }}
- --ignored-vpa-object-namespaces={{ join "," . }}
{{- end }}
{{- end }}
