{{/* Names and labels. */}}
{{- define "mediagen.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mediagen.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "mediagen.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "mediagen.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "mediagen.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mediagen.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Selector labels of one role: (dict "ctx" $ "role" "api"). */}}
{{- define "mediagen.roleSelector" -}}
{{ include "mediagen.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{- define "mediagen.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "mediagen.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "mediagen.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret the replicas read: the operator's, or the chart's. */}}
{{- define "mediagen.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "mediagen.fullname" .) -}}
{{- end -}}

{{- define "mediagen.catalogConfigMap" -}}
{{- .Values.catalog.existingConfigMap | default (printf "%s-catalog" (include "mediagen.fullname" .)) -}}
{{- end -}}

{{- define "mediagen.hasCatalog" -}}
{{- if or .Values.catalog.content .Values.catalog.existingConfigMap }}true{{ end -}}
{{- end -}}

{{/* The bucket's credentials are passed when the chart holds them or an existingSecret may. */}}
{{- define "mediagen.hasS3Credentials" -}}
{{- if or .Values.secrets.existingSecret .Values.blob.accessKeyID }}true{{ end -}}
{{- end -}}

{{- define "mediagen.publicURL" -}}
{{- if .Values.publicURL -}}
{{- .Values.publicURL -}}
{{- else if .Values.ingress.enabled -}}
{{- printf "https://%s" .Values.ingress.host -}}
{{- else -}}
{{- printf "http://%s.%s.svc:%v" (include "mediagen.fullname" .) .Release.Namespace .Values.service.port -}}
{{- end -}}
{{- end -}}

{{/*
What the chart cannot express in values.schema.json: the settings that depend on each other.
Every template includes it, so `helm template` fails with the message whichever it renders.
*/}}
{{- define "mediagen.validate" -}}
{{- if and (not .Values.secrets.existingSecret) (not .Values.database.url) -}}
{{- fail "database.url is required (postgres://user:password@host:5432/db): every replica shares one PostgreSQL database; or set secrets.existingSecret to a Secret with the key database-url" -}}
{{- end -}}
{{- if not .Values.blob.url -}}
{{- fail "blob.url is required (s3://bucket/?endpoint=host:port): replicas share results through one S3 bucket" -}}
{{- end -}}
{{- if and .Values.secrets.existingSecret (or .Values.database.url .Values.secrets.signingKey .Values.secrets.upstreamKeys .Values.blob.accessKeyID .Values.blob.secretAccessKey) -}}
{{- fail "secrets.existingSecret is set: give database.url, secrets.signingKey, secrets.upstreamKeys and the blob credentials in that Secret, not in values (list its upstream keys in secrets.upstreamKeyNames)" -}}
{{- end -}}
{{- if and (not .Values.secrets.existingSecret) .Values.secrets.upstreamKeyNames -}}
{{- fail "secrets.upstreamKeyNames names keys of secrets.existingSecret, which is not set: give the keys' values in secrets.upstreamKeys instead" -}}
{{- end -}}
{{- if ne (empty .Values.blob.accessKeyID) (empty .Values.blob.secretAccessKey) -}}
{{- fail "blob.accessKeyID and blob.secretAccessKey go together: set both or neither" -}}
{{- end -}}
{{- if and .Values.catalog.content .Values.catalog.existingConfigMap -}}
{{- fail "catalog.content and catalog.existingConfigMap: set one, not both" -}}
{{- end -}}
{{- if and .Values.ingress.enabled (not .Values.ingress.host) -}}
{{- fail "ingress.enabled needs ingress.host" -}}
{{- end -}}
{{- if and .Values.api.autoscaling.enabled (gt (int .Values.api.autoscaling.minReplicas) (int .Values.api.autoscaling.maxReplicas)) -}}
{{- fail "api.autoscaling.minReplicas is above maxReplicas" -}}
{{- end -}}
{{- if and .Values.worker.autoscaling.enabled (gt (int .Values.worker.autoscaling.minReplicas) (int .Values.worker.autoscaling.maxReplicas)) -}}
{{- fail "worker.autoscaling.minReplicas is above maxReplicas" -}}
{{- end -}}
{{- end -}}

{{/* The environment every container shares: (dict "ctx" $ "hook" bool). A hook reads the
hook Secret: the chart's Secret is made only after pre-install hooks ran. */}}
{{- define "mediagen.env" -}}
{{- $root := .ctx -}}
{{- $secret := include "mediagen.secretName" $root -}}
{{- if and .hook (not $root.Values.secrets.existingSecret) -}}
{{- $secret = printf "%s-hook" (include "mediagen.fullname" $root) -}}
{{- end -}}
- name: MEDIAGEN_DB
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: database-url}
- name: MEDIAGEN_BLOB
  value: {{ $root.Values.blob.url | quote }}
{{- if include "mediagen.hasS3Credentials" $root }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: aws-access-key-id{{ if $root.Values.secrets.existingSecret }}, optional: true{{ end }}}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: aws-secret-access-key{{ if $root.Values.secrets.existingSecret }}, optional: true{{ end }}}
{{- end }}
- name: MEDIAGEN_DB_WAIT
  value: {{ $root.Values.database.wait | quote }}
- name: MEDIAGEN_LOG_FORMAT
  value: {{ $root.Values.logFormat | quote }}
- name: MEDIAGEN_LOG_LEVEL
  value: {{ $root.Values.logLevel | quote }}
{{- if and (not .hook) (include "mediagen.hasCatalog" $root) }}
- name: MEDIAGEN_CATALOG
  value: /etc/mediagen/catalog/catalog.yaml
{{- end }}
{{- range $name, $value := $root.Values.env }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{/* What serve needs beyond the shared environment: (dict "ctx" $ "role" "api"). */}}
{{- define "mediagen.serveEnv" -}}
{{- $root := .ctx -}}
{{- $v := index $root.Values .role -}}
{{- $secret := include "mediagen.secretName" $root -}}
- name: MEDIAGEN_LISTEN
  value: {{ printf ":%v" $v.port | quote }}
- name: MEDIAGEN_METRICS_LISTEN
  value: {{ printf ":%v" $v.metricsPort | quote }}
- name: MEDIAGEN_PUBLIC_URL
  value: {{ include "mediagen.publicURL" $root | quote }}
- name: MEDIAGEN_SIGNING_KEY
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: signing-key}
{{- if include "mediagen.hasCatalog" $root }}
- name: MEDIAGEN_CATALOG_WATCH
  value: {{ $root.Values.catalog.watch | quote }}
{{- end }}
{{- range $name, $_ := $root.Values.secrets.upstreamKeys }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: {{ $name }}}
{{- end }}
{{- range $root.Values.secrets.upstreamKeyNames }}
- name: {{ . }}
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: {{ . }}}
{{- end }}
{{- end -}}

{{/* Volumes of every pod: the scratch emptyDirs and the catalog. */}}
{{- define "mediagen.volumes" -}}
- name: tmp
  emptyDir: {sizeLimit: {{ .Values.scratch.tmpSizeLimit }}}
- name: data
  emptyDir: {sizeLimit: {{ .Values.scratch.dataSizeLimit }}}
{{- if include "mediagen.hasCatalog" . }}
# The whole ConfigMap as a directory, never a subPath: the kubelet updates a directory mount
# in place (a symlink swap) and never a subPath one, and the catalog is reloaded on change.
- name: catalog
  configMap:
    name: {{ include "mediagen.catalogConfigMap" . }}
    items: [{key: catalog.yaml, path: catalog.yaml}]
{{- end }}
{{- end -}}

{{- define "mediagen.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /var/lib/mediagen
{{- if include "mediagen.hasCatalog" . }}
- name: catalog
  mountPath: /etc/mediagen/catalog
  readOnly: true
{{- end }}
{{- end -}}
