{{/* Name of every object of the release. */}}
{{- define "etcd-operator.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the operator's pods; fixed for the life of a release. */}}
{{- define "etcd-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "etcd-operator.labels" -}}
{{ include "etcd-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "etcd-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ default (include "etcd-operator.fullname" .) .Values.serviceAccount.name }}
{{- else -}}
{{ required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{- define "etcd-operator.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ default (printf "v%s" .Chart.AppVersion) .Values.image.tag }}
{{- end -}}
{{- end -}}

{{/*
The webhook Service. The operator issues its certificate for this name, so it is passed
to the manager unless it is the manager's default (the kustomize install's name).
*/}}
{{- define "etcd-operator.webhookServiceName" -}}
{{ include "etcd-operator.fullname" . | trunc 47 | trimSuffix "-" }}-webhook-service
{{- end -}}

{{/* The manager's metrics port: 8443 for HTTPS, 8080 for plain HTTP. */}}
{{- define "etcd-operator.metricsPort" -}}
{{- if .Values.metrics.secure }}8443{{ else }}8080{{ end -}}
{{- end -}}
