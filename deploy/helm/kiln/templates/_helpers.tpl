{{/* Names: kiln.fullname is the release-scoped prefix of every object. */}}
{{- define "kiln.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kiln.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kiln.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "kiln.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "kiln.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kiln.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kiln.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "kiln.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kiln.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Secrets: the one the chart manages, or the ones the user named. */}}
{{- define "kiln.secretName" -}}
{{ include "kiln.fullname" . }}
{{- end }}

{{- define "kiln.signingSecretName" -}}
{{- .Values.signing.existingSecret | default (printf "%s-signing" (include "kiln.fullname" .)) }}
{{- end }}

{{- define "kiln.redisHost" -}}
{{- if .Values.redis.internal.enabled }}
{{- printf "%s-redis" (include "kiln.fullname" .) }}
{{- else }}
{{- required "redis.host is required when redis.internal.enabled is false" .Values.redis.host }}
{{- end }}
{{- end }}

{{- define "kiln.redisPort" -}}
{{- if .Values.redis.internal.enabled }}6379{{ else }}{{ .Values.redis.port }}{{ end }}
{{- end }}

{{- define "kiln.redisHasPassword" -}}
{{- if and (not .Values.redis.internal.enabled) (or .Values.redis.password .Values.redis.existingSecret) }}true{{ end }}
{{- end }}

{{- define "kiln.s3HasKeys" -}}
{{- if or .Values.s3.existingSecret .Values.s3.accessKeyId }}true{{ end }}
{{- end }}

{{/*
Environment shared by the API and the workers: cache, signing key, Redis, S3. KILN_REDIS_URL is
composed from KILN_REDIS_PASSWORD by the kubelet ($(VAR) expansion), so the password never
appears in the pod spec.
*/}}
{{- define "kiln.commonEnv" -}}
- name: KILN_CACHE_DIR
  value: /var/cache/kiln
{{- with .Values.cache.maxBytes }}
- name: KILN_CACHE_MAX_BYTES
  value: {{ . | int64 | quote }}
{{- end }}
- name: KILN_COMPILE_TIMEOUT
  value: {{ .Values.compileTimeout | quote }}
- name: KILN_KERNEL_CACHE
  value: {{ .Values.kernelCache | default "auto" | quote }}
- name: KILN_VISIBILITY_TIMEOUT
  value: {{ .Values.visibilityTimeout | default (add (mul 3 .Values.compileTimeout) 60) | quote }}
- name: KILN_SIGNING_KEY_FILE
  value: /etc/kiln/signing/signing-key.pem
- name: TMPDIR
  value: /tmp
- name: XDG_CACHE_HOME
  value: /tmp/.cache
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
{{- if include "kiln.redisHasPassword" . }}
- name: KILN_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret | default (include "kiln.secretName" .) }}
      key: {{ .Values.redis.existingSecretKey }}
{{- end }}
- name: KILN_REDIS_URL
  value: {{ printf "%s://%s%s:%s/%d" (ternary "rediss" "redis" (and .Values.redis.tls (not .Values.redis.internal.enabled))) (ternary ":$(KILN_REDIS_PASSWORD)@" "" (eq (include "kiln.redisHasPassword" .) "true")) (include "kiln.redisHost" .) (include "kiln.redisPort" .) (int .Values.redis.db) | quote }}
{{- with .Values.s3.url }}
- name: KILN_S3_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.s3.endpointUrl }}
- name: KILN_S3_ENDPOINT_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.s3.region }}
- name: AWS_DEFAULT_REGION
  value: {{ . | quote }}
{{- end }}
{{- if include "kiln.s3HasKeys" . }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .Values.s3.existingSecret | default (include "kiln.secretName" .) }}
      key: {{ .Values.s3.accessKeyIdKey }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.s3.existingSecret | default (include "kiln.secretName" .) }}
      key: {{ .Values.s3.secretAccessKeyKey }}
{{- end }}
{{- end }}

{{/* Extra KILN_* variables from a map, sorted by name so renders are stable. */}}
{{- define "kiln.extraEnv" -}}
{{- range $k, $v := . }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end }}

{{/* Volumes every Kiln pod mounts: cache, /tmp, the signing key (read-only). */}}
{{- define "kiln.volumes" -}}
- name: cache
{{- if .Values.cache.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ .Values.cache.existingClaim }}
{{- else }}
  emptyDir:
    sizeLimit: {{ .Values.cache.sizeLimit }}
{{- end }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
- name: signing-key
  secret:
    secretName: {{ include "kiln.signingSecretName" . }}
    defaultMode: 0440
    items:
      - key: {{ .Values.signing.existingSecretKey }}
        path: signing-key.pem
{{- end }}

{{- define "kiln.volumeMounts" -}}
- name: cache
  mountPath: /var/cache/kiln
- name: tmp
  mountPath: /tmp
- name: signing-key
  mountPath: /etc/kiln/signing
  readOnly: true
{{- end }}

{{/*
The Redis lists a pool's queues are kept in: kiln worker --queues takes target kinds (gpu = the
four GPU kinds); kind K is Celery queue kiln.K, whose waiting messages are the list
kiln:v1:celery:kiln.K (Celery's global_keyprefix; kiln/cluster/queue.py). One per line.
*/}}
{{- define "kiln.queueLists" -}}
{{- $kinds := list }}
{{- range $q := . }}
{{- if eq $q "gpu" }}
{{- $kinds = concat $kinds (list "cuda" "rocm" "vulkan" "metal") }}
{{- else }}
{{- $kinds = append $kinds $q }}
{{- end }}
{{- end }}
{{- range $k := uniq $kinds }}
{{ $k }}=kiln:v1:celery:kiln.{{ $k }}
{{- end }}
{{- end }}
