{{- define "gpuplane.fullname" -}}{{ printf "%s-controller" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- define "gpuplane.labels" -}}
app.kubernetes.io/name: gpuplane
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
{{- define "gpuplane.selector" -}}
app.kubernetes.io/name: gpuplane
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}
{{- define "gpuplane.image" -}}
{{- $tag := .Values.image.tag | default (printf "v%s" .Chart.AppVersion) -}}
{{- if .Values.image.digest -}}{{ printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}{{- else -}}{{ printf "%s:%s" .Values.image.repository $tag }}{{- end -}}
{{- end -}}
