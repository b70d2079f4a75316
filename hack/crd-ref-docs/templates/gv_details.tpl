{{- define "gvDetails" -}}
{{- $gv := . -}}
## {{ $gv.GroupVersionString }}

{{ $gv.Doc | trim | replace "<" "\\<" | replace ">" "\\>" }}
{{- if $gv.Kinds }}

Resource types:
{{- range $gv.SortedKinds }}
- {{ $gv.TypeForKind . | markdownRenderTypeLink }}
{{- end }}
{{- end }}
{{- range $gv.SortedTypes }}
{{- template "type" . }}
{{- end }}
{{- end -}}
