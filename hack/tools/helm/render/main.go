// Command render prints, as YAML documents, what a kustomization or a Helm chart installs:
// the kustomization as `kubectl apply -k` builds it (with the kustomize library of the
// kubectl the project pins), the chart as `helm template` renders it (with the helm of make
// helm). deploy/chart_test.go compares the two; nothing else runs it.
//
//	render kustomize DIR
//	render chart [-name NAME] [-namespace NS] [-set k=v]... [-api-versions G/V/KIND]... DIR
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: render kustomize DIR | render chart [flags] DIR")
	}
	switch args[0] {
	case "kustomize":
		if len(args) != 2 {
			return errors.New("usage: render kustomize DIR")
		}
		return kustomize(args[1], out)
	case "chart":
		return chart(args[1:], out)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// kustomize builds dir as kubectl apply -k does: krusty's default options, files under dir
// only.
func kustomize(dir string, out io.Writer) error {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return fmt.Errorf("building %s: %w", dir, err)
	}
	y, err := resources.AsYaml()
	if err != nil {
		return fmt.Errorf("printing %s: %w", dir, err)
	}
	_, err = out.Write(y)
	return err
}

// listFlag is a flag given any number of times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// chart renders the chart in dir as helm template does: client only, no cluster, the release
// installed anew.
func chart(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("render chart", flag.ContinueOnError)
	name := fs.String("name", "etcd-operator", "release name")
	namespace := fs.String("namespace", "etcd-operator-system", "release namespace")
	var sets, apiVersions listFlag
	fs.Var(&sets, "set", "a value, as helm's --set takes it (repeatable)")
	fs.Var(&apiVersions, "api-versions", "an API version or group/version/kind the cluster serves, as helm template's --api-versions (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: render chart [flags] DIR")
	}
	ch, err := loader.Load(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("loading chart %s: %w", fs.Arg(0), err)
	}
	vals := map[string]any{}
	for _, s := range sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			return fmt.Errorf("--set %s: %w", s, err)
		}
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = *name
	install.Namespace = *namespace
	install.APIVersions = chartutil.VersionSet(apiVersions)
	rel, err := install.Run(ch, vals)
	if err != nil {
		return fmt.Errorf("rendering chart %s: %w", fs.Arg(0), err)
	}
	_, err = io.WriteString(out, rel.Manifest)
	return err
}
