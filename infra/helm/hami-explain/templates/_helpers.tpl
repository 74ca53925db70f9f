{{/*
HAMi's chart keys (values.yaml, "HAMi's keys") are applied where ours are left at their defaults; both set to
different values is an error naming the two, never a silent choice. A HAMi key at the shared default (a full copy of
HAMi's values.yaml) counts as unset. "hami.fromHami" takes HAMi's value, ours, our default and both keys' names, and
gives the value that applies.
*/}}
{{- define "hami.fromHami" -}}
{{- $hami := ternary "" .hami (eq .hami .default) -}}
{{- if and $hami (ne $hami .ours) (ne .ours .default) -}}
{{- fail (printf "%s (HAMi's key) is %q but %s is %q: set only one of them (HAMi's key applies when %s is left at %q)" .hamiKey $hami .oursKey .ours .oursKey .default) -}}
{{- end -}}
{{- default .ours $hami -}}
{{- end -}}

{{/*
The relay's tuning values as the variables they set, as JSON ({"RELAY_AHEAD_MAX_BATCHES": "8"}): only the values
given, so lib/relay/config.ts stays the one source of the defaults. An entry of relay.extraEnv naming one of these
variables with another value (or a valueFrom) fails, naming the two: in the pod, env wins over the ConfigMap, so one
of them would be dropped silently. A hand-over not below the extender deadline fails here, not at the relay's start
(the relay's own rule; an extender deadline set through relay.extraEnv is left to that rule). `int64`: a number from a
values file reaches the template as a float, which would print as 8.64e+07.
*/}}
{{- define "hami.relayTuning" -}}
{{- $relay := .Values.relay -}}
{{- $extra := dict -}}
{{- range $relay.extraEnv }}{{ $_ := set $extra (toString .name) . }}{{ end -}}
{{- $out := dict -}}
{{- range $var, $key := dict "RELAY_AHEAD_MAX_BATCHES" "aheadMaxBatches" "RELAY_AHEAD_COLD_AFTER_MS" "aheadColdAfterMs" "RELAY_BIND_HANDOVER_MS" "bindHandOverMs" -}}
{{- $given := index $relay $key -}}
{{- if not (kindIs "invalid" $given) -}}
{{- $value := $given | int64 | toString -}}
{{- with index $extra $var -}}
{{- $theirs := ternary (printf "to %q" (toString (index . "value"))) "from a valueFrom" (hasKey . "value") -}}
{{- if or (not (hasKey . "value")) (ne (toString (index . "value")) $value) -}}
{{- fail (printf "relay.extraEnv sets %s %s but relay.%s is %q: set only one of them (relay.%s sets %s; in the pod, relay.extraEnv would win)" $var $theirs $key $value $key $var) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $out $var $value -}}
{{- end -}}
{{- end -}}
{{- with $out.RELAY_BIND_HANDOVER_MS -}}
{{- if and (not (hasKey $extra "RELAY_EXTENDER_DEADLINE_MS")) (ge (int64 .) (int64 $relay.extenderDeadlineMs)) -}}
{{- fail (printf "relay.bindHandOverMs is %s but must be below relay.extenderDeadlineMs (%d), with room for the control plane's own wait (docs/relay.md, \"Bind hand-over\")" . (int64 $relay.extenderDeadlineMs)) -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
The prefix of every object's name: HAMi's fullnameOverride, else HAMi's nameOverride as HAMi's chart names its
objects (the release name when it contains it, else <release>-<nameOverride>), else namePrefix (default hami).
At most 40 characters, so every name, label value and Service DNS label stays within Kubernetes' limits.
*/}}
{{- define "hami.prefix" -}}
{{- $hami := "" -}}
{{- $hamiKey := "fullnameOverride" -}}
{{- if .Values.fullnameOverride -}}
{{- $hami = .Values.fullnameOverride -}}
{{- else if .Values.nameOverride -}}
{{- $hamiKey = "nameOverride" -}}
{{- $hami = ternary .Release.Name (printf "%s-%s" .Release.Name .Values.nameOverride) (contains .Values.nameOverride .Release.Name) -}}
{{- end -}}
{{- $hami = $hami | trunc 40 | trimSuffix "-" -}}
{{- include "hami.fromHami" (dict "hami" $hami "hamiKey" $hamiKey "ours" .Values.namePrefix "oursKey" "namePrefix" "default" "hami") -}}
{{- end -}}

{{/* Object names: <prefix>-relay, -scheduler, -node-agent, -webhook (prefix: hami.prefix). */}}
{{- define "hami.relay" -}}{{ include "hami.prefix" . }}-relay{{- end -}}
{{- define "hami.scheduler" -}}{{ include "hami.prefix" . }}-scheduler{{- end -}}
{{- define "hami.nodeAgent" -}}{{ include "hami.prefix" . }}-node-agent{{- end -}}
{{- define "hami.webhook" -}}{{ include "hami.prefix" . }}-webhook{{- end -}}
{{- define "hami.ownedAnnotationsName" -}}{{ include "hami.prefix" . }}-owned-annotations{{- end -}}
{{- define "hami.webhookSecret" -}}{{ include "hami.prefix" . }}-relay-webhook-tls{{- end -}}
{{/* kube-scheduler's client certificate for the extender port (mutual TLS). */}}
{{- define "hami.extenderClientSecret" -}}{{ include "hami.prefix" . }}-scheduler-extender-tls{{- end -}}

{{/*
The resource names in force, as JSON (`include "hami.resourceNames" . | fromJson`): resourceNames.*, or HAMi's
top-level resourceName, resourceMem, resourceMemPercentage, resourceCores, resourcePriority where ours are left at
their defaults (which are HAMi's).
*/}}
{{- define "hami.resourceNames" -}}
{{- $ours := .Values.resourceNames -}}
{{- $out := dict "neuron" $ours.neuron "neuronCores" $ours.neuronCores -}}
{{- range $key, $m := dict "count" (list "resourceName" "nvidia.com/gpu") "memory" (list "resourceMem" "nvidia.com/gpumem") "memoryPercentage" (list "resourceMemPercentage" "nvidia.com/gpumem-percentage") "cores" (list "resourceCores" "nvidia.com/gpucores") "priority" (list "resourcePriority" "nvidia.com/priority") -}}
{{- $hamiKey := index $m 0 -}}
{{- $value := include "hami.fromHami" (dict "hami" (index $.Values $hamiKey | default "") "hamiKey" $hamiKey "ours" (index $ours $key | default (index $m 1)) "oursKey" (printf "resourceNames.%s" $key) "default" (index $m 1)) -}}
{{- $_ := set $out $key $value -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
An image reference with global.imageRegistry (HAMi's key) in place of its registry: the repository's first
component when it names a host (has a dot or a port, or is localhost), else in front of it.
Takes dict "root" . "repository" <repository> "tag" <tag>.
*/}}
{{- define "hami.imageRef" -}}
{{- $repo := .repository -}}
{{- $registry := dig "imageRegistry" "" (.root.Values.global | default dict) -}}
{{- if $registry -}}
{{- $parts := splitList "/" $repo -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $repo = join "/" (rest $parts) -}}
{{- end -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" $registry) $repo -}}
{{- end -}}
{{- printf "%s:%s" $repo .tag -}}
{{- end -}}

{{/*
kube-scheduler's tag: scheduler.image.tag (or HAMi's scheduler.kubeScheduler.imageTag) when pinned, else the
cluster's version as `helm install` reads it (or `helm template --kube-version`), without a vendor suffix
(v1.30.8-eks-2d5f260 and v1.30.8+k3s1 give v1.30.8, as HAMi's chart strips them), with .0 added when it names no
patch release (`--kube-version 1.30`).
*/}}
{{- define "hami.kubeSchedulerTag" -}}
{{- $hamiTag := dig "kubeScheduler" "imageTag" "" (.Values.scheduler | default dict) -}}
{{- $pinned := include "hami.fromHami" (dict "hami" $hamiTag "hamiKey" "scheduler.kubeScheduler.imageTag" "ours" (.Values.scheduler.image.tag | default "") "oursKey" "scheduler.image.tag" "default" "") -}}
{{- if $pinned -}}
{{- $pinned -}}
{{- else -}}
{{- $version := regexFind "^v?[0-9]+\\.[0-9]+(\\.[0-9]+)?" .Capabilities.KubeVersion.Version | trimPrefix "v" -}}
{{- if eq (len (splitList "." $version)) 2 }}{{ $version = printf "%s.0" $version }}{{ end -}}
v{{ $version }}
{{- end -}}
{{- end -}}

{{/*
"true" when the cluster serves ValidatingAdmissionPolicy in admissionregistration.k8s.io/v1 (GA in Kubernetes 1.30):
against a cluster (`helm install`, `helm upgrade`), its discovery says; without one (`helm template`, `--dry-run=client`,
which know no kinds) the version compare does (`--kube-version`), or `--api-versions
admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy`. Helm's offline capabilities list no kind at all
(not even v1/Pod), which is how the two cases are told apart.
*/}}
{{- define "hami.admissionPolicyAPI" -}}
{{- $api := .Capabilities.APIVersions -}}
{{- if or ($api.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy") (and (not ($api.Has "v1/Pod")) (semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version)) }}true{{ end }}
{{- end -}}

{{/* "true" when the node agent's ValidatingAdmissionPolicy (templates/node-agent.yaml) is rendered. */}}
{{- define "hami.nodeAgentPolicy" -}}
{{- if and .Values.nodeAgent.enabled .Values.nodeAgent.admissionPolicy (include "hami.admissionPolicyAPI" .) }}true{{ end }}
{{- end -}}
{{/* The relay's certificates come from its own CA unless cert-manager is chosen; needed by the webhook and/or the extender port. */}}
{{- define "hami.tlsNeeded" -}}{{ if or .Values.webhook.enabled (eq .Values.extender.tls "mutual") (eq .Values.userPort.tls "https") }}true{{ end }}{{- end -}}

{{/*
Pod annotations only the scheduler writes (lib/engine/devices/index.ts SchedulerOwnedPodAnnotations, plus the relay's
nudge annotation). test/unit/relay/ownedAnnotations.test.ts keeps this list equal to the code's.
*/}}
{{- define "hami.ownedAnnotations" -}}
["hami.io/vgpu-node", "hami.io/vgpu-time", "hami.io/vgpu-devices-to-allocate", "hami.io/vgpu-devices-allocated", "hami.io/bind-phase", "hami.io/bind-time", "hami.io/vgpu-mig-allocations", "hami.io/aws-neuron-devices-allocated", "AWS_NEURON_IDS", "NEURON_ALLOC_TIME", "NEURON_RESOURCE_TYPE", "aws.amazon.com/predicate-node", "hami.io/requeue"]
{{- end -}}

{{/*
"true" when the scheduler-owned annotations policy (templates/owned-annotations.yaml) is rendered: ownedAnnotations.enforce
is policy and the cluster has ValidatingAdmissionPolicy in admissionregistration.k8s.io/v1 (hami.admissionPolicyAPI).
The webhook's objectSelector depends on it: without the policy, pods labelled hami.io/webhook=ignore go to the webhook
too, for the forged-annotation check alone.
*/}}
{{- define "hami.ownedAnnotationsPolicy" -}}
{{- if and (eq .Values.ownedAnnotations.enforce "policy") (include "hami.admissionPolicyAPI" .) }}true{{ end }}
{{- end -}}

{{/* The relay's image (the node agent runs it too). */}}
{{- define "hami.image" -}}{{ include "hami.imageRef" (dict "root" . "repository" .Values.image.repository "tag" (default .Chart.AppVersion .Values.image.tag)) }}{{- end -}}

{{- define "hami.kubeSchedulerImage" -}}{{ include "hami.imageRef" (dict "root" . "repository" .Values.scheduler.image.repository "tag" (include "hami.kubeSchedulerTag" .)) }}{{- end -}}

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
