package snapshot

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// Command is the agent binary's subcommand that a backup's pod runs.
const Command = "backup"

// DefaultTerminationLog is the kubelet's default terminationMessagePath, where the pod
// reports its outcome for the operator to read.
const DefaultTerminationLog = "/dev/termination-log"

// maxReport is the most of a termination message the kubelet keeps.
const maxReport = 4096

// Args are the flags of `etcd-operator backup`: take a snapshot (Options), or, with Delete,
// delete files of the destination (objects, with S3).
type Args struct {
	Options
	// Delete are paths relative to Root (keys, with S3) to delete instead of taking a
	// snapshot.
	Delete []string
	// TerminationLog is where the Report is written.
	TerminationLog string
}

// Parse reads the arguments of `etcd-operator backup` (without the subcommand). It returns
// flag.ErrHelp for -h.
func Parse(args []string) (Args, error) {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	var a Args
	var members, del string
	fs.StringVar(&members, "members", "", "comma-separated name=clientURL of the cluster's members")
	fs.StringVar(&a.Root, "root", "", "where the destination is mounted")
	fs.StringVar(&a.Path, "path", "", "folder inside the destination, relative to --root")
	fs.StringVar(&a.Name, "name", "", "snapshot name, <cluster>-<backup>; the file is <name>-<revision>.db")
	fs.StringVar(&a.TLS.CertFile, "cert-file", "", "client certificate to dial the members with (https client URLs)")
	fs.StringVar(&a.TLS.KeyFile, "key-file", "", "key of --cert-file")
	fs.StringVar(&a.TLS.CAFile, "ca-file", "", "CA certificates to verify the members' server certificates by")
	fs.StringVar(&del, "delete", "", "comma-separated paths relative to --root to delete, instead of taking a snapshot")
	fs.StringVar(&a.TerminationLog, "termination-log", DefaultTerminationLog, "file to write the outcome to, for the operator")
	a.S3.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Args{}, err
	}
	if fs.NArg() > 0 {
		return Args{}, fmt.Errorf("parsing backup flags: unexpected arguments %q", fs.Args())
	}
	for _, kv := range strings.Split(members, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		name, url, ok := strings.Cut(kv, "=")
		if !ok || name == "" || url == "" {
			return Args{}, fmt.Errorf("parsing backup flags: member %q is not name=clientURL", kv)
		}
		a.Members = append(a.Members, Endpoint{Name: name, URL: url})
	}
	for _, p := range strings.Split(del, ",") {
		if p = strings.TrimSpace(p); p != "" {
			a.Delete = append(a.Delete, p)
		}
	}
	if err := a.TLS.Validate(); err != nil {
		return Args{}, fmt.Errorf("parsing backup flags: --cert-file, --key-file and --ca-file: %w", err)
	}
	if !a.S3.IsZero() {
		if err := a.S3.Validate(); err != nil {
			return Args{}, fmt.Errorf("parsing backup flags: %w", err)
		}
	}
	switch {
	case a.Root == "" && a.S3.IsZero():
		return Args{}, errors.New("parsing backup flags: --root or --s3-endpoint is required")
	case len(a.Delete) == 0 && (a.Name == "" || len(a.Members) == 0):
		return Args{}, errors.New("parsing backup flags: --name and --members are required to take a snapshot")
	}
	return a, nil
}

// Render is the command line Parse reads back (without the subcommand).
func (a Args) Render() []string {
	var out []string
	if a.Root != "" {
		out = append(out, "--root="+a.Root)
	}
	out = append(out, a.S3.Args()...)
	if len(a.Delete) > 0 {
		return append(out, "--delete="+strings.Join(a.Delete, ","))
	}
	members := make([]string, len(a.Members))
	for i, m := range a.Members {
		members[i] = m.Name + "=" + m.URL
	}
	out = append(out, "--path="+a.Path, "--name="+a.Name, "--members="+strings.Join(members, ","))
	if !a.TLS.IsZero() {
		out = append(out, "--cert-file="+a.TLS.CertFile, "--key-file="+a.TLS.KeyFile, "--ca-file="+a.TLS.CAFile)
	}
	if a.TerminationLog != "" && a.TerminationLog != DefaultTerminationLog {
		out = append(out, "--termination-log="+a.TerminationLog)
	}
	return out
}

// Report is what a backup's pod writes as its termination message, in JSON: the Result of a
// snapshot taken, or the reason and message of a failure.
type Report struct {
	Result  *Result       `json:"result,omitempty"`
	Reason  FailureReason `json:"reason,omitempty"`
	Message string        `json:"message,omitempty"`
}

// ReportOf is the Report of a run that returned res and err.
func ReportOf(res Result, err error) Report {
	if err == nil {
		return Report{Result: &res}
	}
	var f *Failure
	if !errors.As(err, &f) {
		f = fail(FailureError, err).(*Failure)
	}
	return Report{Reason: f.Reason, Message: f.Error()}
}

// Write writes r to the file at path as JSON, its message cut so that the whole fits what
// the kubelet keeps.
func (r Report) Write(path string) error {
	if n := len(r.Message); n > maxReport/2 {
		r.Message = strings.ToValidUTF8("..."+r.Message[n-maxReport/2:], "")
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding the backup's report: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing the backup's report: %w", err)
	}
	return nil
}

// ReadReport reads a Report from a backup pod's termination message; ok is false when msg is
// not one (a pod killed before it wrote it).
func ReadReport(msg string) (r Report, ok bool) {
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		return Report{}, false
	}
	return r, r.Result != nil || r.Reason != ""
}
