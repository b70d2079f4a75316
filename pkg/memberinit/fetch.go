package memberinit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/etcd-operator/etcd-operator/pkg/objstore"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// FetchCommand is the agent binary's subcommand that the restored seed's init container
// runs to download its snapshot from S3 (Fetch).
const FetchCommand = "fetch-snapshot"

// FetchOptions are the flags of `etcd-operator fetch-snapshot`.
type FetchOptions struct {
	// S3 is the bucket; Key the snapshot's key in it.
	S3  objstore.Config
	Key string
	// To is the file the snapshot is written to, which member-init restores from.
	To string
	// SHA256 is the snapshot's SHA-256 as its EtcdBackup recorded it; when empty, the one
	// stored beside the object (snapshot.SumKey) is checked, if there is one.
	SHA256 string
	// DataDir is etcd's data dir: when it holds a member, nothing is fetched (the pod
	// restarts a seed that was restored already).
	DataDir string
	// TerminationLog is where a failure is written for the operator; DefaultTerminationLog
	// when empty.
	TerminationLog string
}

// ParseFetch reads the arguments of `etcd-operator fetch-snapshot` (without the subcommand).
func ParseFetch(args []string) (FetchOptions, error) {
	fs := flag.NewFlagSet(FetchCommand, flag.ContinueOnError)
	var o FetchOptions
	o.S3.AddFlags(fs)
	fs.StringVar(&o.Key, "key", "", "the snapshot's key in the bucket")
	fs.StringVar(&o.To, "to", "", "file to write the snapshot to")
	fs.StringVar(&o.SHA256, "sha256", "", "the snapshot's SHA-256, hex; when empty, the one stored beside it is checked")
	fs.StringVar(&o.DataDir, "data-dir", "", "etcd's data dir: nothing is fetched when it holds a member")
	fs.StringVar(&o.TerminationLog, "termination-log", DefaultTerminationLog, "file to write the termination message to on failure")
	if err := fs.Parse(args); err != nil {
		return FetchOptions{}, err
	}
	switch {
	case fs.NArg() > 0:
		return FetchOptions{}, fmt.Errorf("parsing %s flags: unexpected arguments %q", FetchCommand, fs.Args())
	case o.Key == "" || o.To == "" || o.DataDir == "":
		return FetchOptions{}, fmt.Errorf("parsing %s flags: --key, --to and --data-dir are required", FetchCommand)
	case o.SHA256 != "" && !sha256Hex.MatchString(o.SHA256):
		return FetchOptions{}, fmt.Errorf("parsing %s flags: --sha256 %q is not a hex SHA-256", FetchCommand, o.SHA256)
	}
	if err := o.S3.Validate(); err != nil {
		return FetchOptions{}, fmt.Errorf("parsing %s flags: %w", FetchCommand, err)
	}
	return o, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Args renders o as the arguments ParseFetch reads.
func (o FetchOptions) Args() []string {
	args := append(o.S3.Args(), "--key="+o.Key, "--to="+o.To, "--data-dir="+o.DataDir)
	if o.SHA256 != "" {
		args = append(args, "--sha256="+o.SHA256)
	}
	if o.TerminationLog != "" && o.TerminationLog != DefaultTerminationLog {
		args = append(args, "--termination-log="+o.TerminationLog)
	}
	return args
}

// Fetch downloads the snapshot o.Key to o.To, unless the data dir already holds a member:
// through a temporary file beside it, checked on its way (etcd's hash, and the SHA-256 of
// o.SHA256 or stored beside the object), and renamed into place only once it passed. Its
// errors wrap ErrRestoreFailed: a seed whose snapshot is missing, truncated or corrupt does not
// start, and member-init never restores it from anything else.
func Fetch(ctx context.Context, o FetchOptions, st snapshot.Store, out io.Writer) error {
	log := newLogger(out).WithField("key", o.Key)
	has, err := hasData(o.DataDir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRestoreFailed, err)
	}
	if has {
		log.Info("data directory holds a member: no snapshot to fetch")
		return nil
	}
	want := o.SHA256
	if want == "" {
		if want, err = storedSum(ctx, st, o.Key); err != nil {
			return fmt.Errorf("%w: %v", ErrRestoreFailed, err)
		}
	}
	obj, err := st.Open(ctx, o.Key)
	if err != nil {
		return fmt.Errorf("%w: snapshot %s: %v", ErrRestoreFailed, o.Key, err)
	}
	defer obj.Close()
	part := o.To + ".part"
	checked, err := download(obj, part)
	if err == nil && want != "" && checked.SHA256 != want {
		err = fmt.Errorf("%w: %s has SHA-256 %s, not the %s its backup recorded", snapshot.ErrCorrupt, o.Key, checked.SHA256, want)
	}
	if err == nil {
		err = os.Rename(part, o.To)
	}
	if err != nil {
		os.Remove(part)
		return fmt.Errorf("%w: %v", ErrRestoreFailed, err)
	}
	if want == "" {
		log.Warn("no SHA-256 recorded for the snapshot: only etcd's own hash was checked")
	}
	log.WithField("bytes", checked.SizeBytes).WithField("sha256", checked.SHA256).Info("snapshot fetched and checked")
	return nil
}

// download writes obj to the file part, created anew, through a snapshot.Verifier.
func download(obj io.Reader, part string) (snapshot.Checked, error) {
	if err := os.MkdirAll(filepath.Dir(part), 0o750); err != nil {
		return snapshot.Checked{}, fmt.Errorf("creating %s: %w", filepath.Dir(part), err)
	}
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return snapshot.Checked{}, fmt.Errorf("creating %s: %w", part, err)
	}
	defer f.Close()
	v := snapshot.NewVerifier()
	if _, err := io.Copy(io.MultiWriter(f, v), obj); err != nil {
		return snapshot.Checked{}, fmt.Errorf("downloading the snapshot: %w", err)
	}
	if err := f.Sync(); err != nil {
		return snapshot.Checked{}, fmt.Errorf("syncing %s: %w", part, err)
	}
	if err := f.Close(); err != nil {
		return snapshot.Checked{}, fmt.Errorf("closing %s: %w", part, err)
	}
	return v.Check("the snapshot downloaded")
}

// storedSum is the SHA-256 stored beside the object key; empty when there is none (a
// snapshot put there by other means).
func storedSum(ctx context.Context, st snapshot.Store, key string) (string, error) {
	obj, err := st.Open(ctx, snapshot.SumKey(key))
	if errors.Is(err, objstore.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the SHA-256 of %s: %w", key, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(io.LimitReader(obj, 1024))
	if err != nil {
		return "", fmt.Errorf("reading the SHA-256 of %s: %w", key, err)
	}
	sum, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if !sha256Hex.MatchString(sum) {
		return "", fmt.Errorf("%s holds no SHA-256", snapshot.SumKey(key))
	}
	return sum, nil
}
