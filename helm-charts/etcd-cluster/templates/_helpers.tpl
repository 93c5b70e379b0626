{{/*
Shared pieces of the member chart. The Go package internal/render computes the same
names and URLs for the controller (render.PeerURL, render.ClientURL, render.Image, the
label constants); its tests check that both agree.
*/}}

{{/* Name of the peer TLS Secret, "" without peer TLS. */}}
{{- define "etcd.peerSecret" -}}
{{- dig "static" "member" "peerSecret" "" .Values.TLS -}}
{{- end -}}

{{/* Name of the server (client-facing) TLS Secret, "" without client TLS. */}}
{{- define "etcd.serverSecret" -}}
{{- dig "static" "member" "serverSecret" "" .Values.TLS -}}
{{- end -}}

{{- define "etcd.peerScheme" -}}
{{- if include "etcd.peerSecret" . }}https{{ else }}http{{ end -}}
{{- end -}}

{{- define "etcd.clientScheme" -}}
{{- if include "etcd.serverSecret" . }}https{{ else }}http{{ end -}}
{{- end -}}

{{/*
DNS name of a member: <pod>.<cluster>.<namespace>.svc[.<domain>]. It resolves through
the headless Service <cluster> (the pod's hostname and subdomain).
Call with (dict "root" $ "name" <pod name>).
*/}}
{{- define "etcd.memberHost" -}}
{{- $host := printf "%s.%s.%s.svc" .name .root.Values.cluster.name .root.Release.Namespace -}}
{{- with .root.Values.cluster.domain }}{{ $host = printf "%s.%s" $host (trimAll "." .) }}{{ end -}}
{{- $host -}}
{{- end -}}

{{/* Labels every object of the cluster carries, and the member pods' selector. */}}
{{- define "etcd.clusterLabels" -}}
app: etcd
etcd_cluster: {{ .Values.cluster.name | quote }}
{{- end -}}

{{/*
A member's labels: the user's spec.pod.labels without the reserved keys ("app" and
"etcd_*"), then the operator's, so user labels can never change what selects members.
Call with (dict "root" $ "name" <pod name>).
*/}}
{{- define "etcd.memberLabels" -}}
{{- $labels := dict -}}
{{- range $k, $v := .root.Values.pod.labels -}}
{{- if not (or (eq $k "app") (hasPrefix "etcd_" $k)) -}}
{{- $_ := set $labels $k (toString $v) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $labels "app" "etcd" -}}
{{- $_ := set $labels "etcd_cluster" .root.Values.cluster.name -}}
{{- $_ := set $labels "etcd_node" .name -}}
{{- toYaml $labels -}}
{{- end -}}

{{/* Version of a member without a leading "v", defaulting to the cluster's. */}}
{{- define "etcd.memberVersion" -}}
{{- trimPrefix "v" (.member.version | default .root.Values.cluster.version) -}}
{{- end -}}
