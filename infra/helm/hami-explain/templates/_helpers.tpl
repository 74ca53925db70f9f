{{/* Object names: <namePrefix>-relay, -scheduler, -node-agent, -webhook. */}}
{{- define "hami.relay" -}}{{ .Values.namePrefix }}-relay{{- end -}}
{{- define "hami.scheduler" -}}{{ .Values.namePrefix }}-scheduler{{- end -}}
{{- define "hami.nodeAgent" -}}{{ .Values.namePrefix }}-node-agent{{- end -}}
{{- define "hami.webhook" -}}{{ .Values.namePrefix }}-webhook{{- end -}}
{{- define "hami.webhookSecret" -}}{{ .Values.namePrefix }}-relay-webhook-tls{{- end -}}
{{/* kube-scheduler's client certificate for the extender port (mutual TLS). */}}
{{- define "hami.extenderClientSecret" -}}{{ .Values.namePrefix }}-scheduler-extender-tls{{- end -}}
{{/* The relay's certificates come from its own CA unless cert-manager is chosen; needed by the webhook and/or the extender port. */}}
{{- define "hami.tlsNeeded" -}}{{ if or .Values.webhook.enabled (eq .Values.extender.tls "mutual") (eq .Values.userPort.tls "https") }}true{{ end }}{{- end -}}

{{/*
Pod annotations only the scheduler writes (lib/engine/podAnnotations.ts SchedulerOwnedPodAnnotations, plus the relay's
nudge annotation). test/unit/relay/ownedAnnotations.test.ts keeps this list equal to the code's.
*/}}
{{- define "hami.ownedAnnotations" -}}
["hami.io/vgpu-node", "hami.io/vgpu-time", "hami.io/vgpu-devices-to-allocate", "hami.io/vgpu-devices-allocated", "hami.io/bind-phase", "hami.io/bind-time", "hami.io/vgpu-mig-allocations", "hami.io/aws-neuron-devices-allocated", "AWS_NEURON_IDS", "NEURON_ALLOC_TIME", "NEURON_RESOURCE_TYPE", "aws.amazon.com/predicate-node", "hami.io/requeue"]
{{- end -}}

{{/*
"true" when the scheduler-owned annotations policy (templates/owned-annotations.yaml) is rendered: ownedAnnotations.enforce
is policy and the cluster has ValidatingAdmissionPolicy in admissionregistration.k8s.io/v1 (GA in Kubernetes 1.30).
The webhook's objectSelector depends on it: without the policy, pods labelled hami.io/webhook=ignore go to the webhook
too, for the forged-annotation check alone.
*/}}
{{- define "hami.ownedAnnotationsPolicy" -}}
{{- if and (eq .Values.ownedAnnotations.enforce "policy") (semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version) }}true{{ end }}
{{- end -}}

{{- define "hami.image" -}}{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}{{- end -}}

{{/* Labels every object carries; `component` is the workload it belongs to. */}}
{{- define "hami.labels" -}}
app.kubernetes.io/part-of: hami-explain
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ .root.Chart.Name }}-{{ .root.Chart.Version }}
app.kubernetes.io/name: {{ .name }}
{{- end -}}

{{- define "hami.selector" -}}
app.kubernetes.io/name: {{ .name }}
{{- end -}}

{{/* The relay image's entry point (Dockerfile ENTRYPOINT). */}}
{{- define "hami.command" -}}
["/nodejs/bin/node", "/app/dist/relay.js"]
{{- end -}}

{{- define "hami.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "hami.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}
