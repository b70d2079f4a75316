{{- /* One type: its doc comment, where it appears, then its fields or its values.
       Angle brackets in doc comments (<name>-<ordinal>) are escaped so that Markdown does not
       read them as HTML. Validation rules written in CEL (XValidation) are left out, as
       crd-ref-docs leaves them out of fields: the doc comment says what they refuse, and
       kubectl apply quotes their message. */ -}}
{{- define "type" -}}
{{- $type := . -}}
{{- if markdownShouldRenderType $type }}

### {{ $type.Name }}
{{ if $type.IsAlias }}
_Underlying type:_ _{{ markdownRenderTypeLink $type.UnderlyingType }}_
{{ end }}
{{ $type.Doc | trim | replace "<" "\\<" | replace ">" "\\>" }}
{{- if $type.Validation }}

_Validation:_
{{- range $type.Validation }}
{{- if not (contains "XValidation" .) }}
- {{ . }}
{{- end }}
{{- end }}
{{- end }}
{{- if $type.References }}

_Appears in:_
{{- range $type.SortedReferences }}
- {{ markdownRenderTypeLink . }}
{{- end }}
{{- end }}
{{- if $type.Members }}

| Field | Description | Default | Validation |
| --- | --- | --- | --- |
{{- if $type.GVK }}
| `apiVersion` _string_ | `{{ $type.GVK.Group }}/{{ $type.GVK.Version }}` | | |
| `kind` _string_ | `{{ $type.GVK.Kind }}` | | |
{{- end }}
{{- range $type.Members }}
| `{{ .Name }}` _{{ markdownRenderType .Type }}_ | {{ template "type_members" . }} | {{ markdownRenderDefault .Default }} | {{ range .Validation -}}
{{- if not (contains "XValidation" .) }}{{ markdownRenderFieldDoc . | replace "Optional: \\{\\}" "Optional" }} <br />{{ end -}}
{{- end }} |
{{- end }}
{{- end }}
{{- if $type.EnumValues }}

| Value | Description |
| --- | --- |
{{- range $type.EnumValues }}
| `{{ .Name }}` | {{ .Doc | trim | replace "<" "\\<" | replace ">" "\\>" | markdownRenderFieldDoc }} |
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
