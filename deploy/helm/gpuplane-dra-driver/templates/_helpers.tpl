{{- define "gpuplane-dra-driver.name" -}}gpuplane-dra-driver{{- end -}}
{{- define "gpuplane-dra-driver.labels" -}}
app.kubernetes.io/name: gpuplane-dra-driver
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: gpuplane
{{- end -}}
{{- define "gpuplane-dra-driver.serviceAccount" -}}{{ .Release.Name }}-gpuplane-dra-driver{{- end -}}
