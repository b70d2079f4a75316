{{- define "type_members" -}}
{{- $field := . -}}
{{- if and (eq $field.Name "metadata") (eq $field.Type.Name "ObjectMeta") -}}
Refer to the Kubernetes API documentation for the fields of `metadata`.
{{- else -}}
{{ $field.Doc | trim | replace "<" "\\<" | replace ">" "\\>" | markdownRenderFieldDoc }}
{{- end -}}
{{- end -}}
