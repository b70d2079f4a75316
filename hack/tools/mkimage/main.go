// Command mkimage packs directory trees into a container image tarball in the
// docker-archive format (manifest.json, an image config and uncompressed layer
// tars), which `ctr images import`, `docker load` and `kind load image-archive`
// accept. It needs no registry, no daemon and no dependency outside the Go
// standard library.
//
// The output is deterministic: entries are sorted, every timestamp is the Unix
// epoch (or -created), owners are 0:0 unless -owner says otherwise, and the
// same inputs give a byte-identical tarball and the same image ID.
//
// Usage:
//
//	mkimage -o out.tar -ref registry.example/name:tag [-entrypoint ARG]... [-cmd ARG]...
//	        [-env K=V]... [-user UID:GID] [-workdir DIR] [-label K=V]... -layer DIR_OR_TAR...
package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// listFlag collects a repeatable string flag in command-line order.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// imageConfig is the subset of the OCI/Docker image configuration that mkimage writes.
type imageConfig struct {
	Architecture string        `json:"architecture"`
	OS           string        `json:"os"`
	Created      string        `json:"created"`
	Config       runtimeConfig `json:"config"`
	RootFS       rootFS        `json:"rootfs"`
	History      []history     `json:"history"`
}

type runtimeConfig struct {
	User       string            `json:"User,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type history struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// manifestEntry is one element of a docker-archive manifest.json.
type manifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// options holds the parsed command line.
type options struct {
	out, ref, user, workdir, arch, goos, owner string
	created                                    time.Time
	entrypoint, cmd, env, labels, layers       listFlag
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var o options
	var created string
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.StringVar(&o.out, "o", "", "output tarball (docker-archive)")
	fs.StringVar(&o.ref, "ref", "", "image reference, e.g. registry.k8s.io/pause:3.10.2")
	fs.StringVar(&o.user, "user", "", "user (and group) the container runs as, e.g. 65532:65532")
	fs.StringVar(&o.workdir, "workdir", "", "working directory of the container")
	fs.StringVar(&o.arch, "arch", runtime.GOARCH, "image architecture")
	fs.StringVar(&o.goos, "os", "linux", "image operating system")
	fs.StringVar(&o.owner, "owner", "0:0", "uid:gid of every entry of the directory layers")
	fs.StringVar(&created, "created", "1970-01-01T00:00:00Z", "creation time (RFC 3339) of the image and of every layer entry")
	fs.Var(&o.entrypoint, "entrypoint", "entrypoint element (repeatable, in order)")
	fs.Var(&o.cmd, "cmd", "cmd element (repeatable, in order)")
	fs.Var(&o.env, "env", "environment variable K=V (repeatable)")
	fs.Var(&o.labels, "label", "label K=V (repeatable)")
	fs.Var(&o.layers, "layer", "a directory packed as a layer, or an uncompressed layer .tar used as is (repeatable, bottom first)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q (layers are given with -layer)", fs.Args())
	}
	if o.out == "" || o.ref == "" || len(o.layers) == 0 {
		return errors.New("-o, -ref and at least one -layer are required")
	}
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return fmt.Errorf("parsing -created: %w", err)
	}
	o.created = t.UTC()
	return build(o)
}

// build writes the image described by o to o.out atomically.
func build(o options) error {
	uid, gid, err := parseOwner(o.owner)
	if err != nil {
		return err
	}
	labels := map[string]string{}
	for _, l := range o.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return fmt.Errorf("label %q is not K=V", l)
		}
		labels[k] = v
	}
	for _, e := range o.env {
		if !strings.Contains(e, "=") {
			return fmt.Errorf("env %q is not K=V", e)
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(o.out), ".mkimage-")
	if err != nil {
		return fmt.Errorf("creating temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	cfg := imageConfig{
		Architecture: o.arch,
		OS:           o.goos,
		Created:      o.created.Format(time.RFC3339),
		Config: runtimeConfig{
			User: o.user, Env: o.env, Entrypoint: o.entrypoint, Cmd: o.cmd,
			WorkingDir: o.workdir, Labels: labels,
		},
		RootFS: rootFS{Type: "layers"},
	}
	var layerFiles []string
	for i, src := range o.layers {
		file := filepath.Join(tmp, strconv.Itoa(i)+".tar")
		digest, err := writeLayer(file, src, uid, gid, o.created)
		if err != nil {
			return fmt.Errorf("packing layer %s: %w", src, err)
		}
		layerFiles = append(layerFiles, file)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, "sha256:"+digest)
		cfg.History = append(cfg.History, history{Created: cfg.Created, CreatedBy: "mkimage -layer " + filepath.Base(src)})
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encoding image config: %w", err)
	}
	cfgSum := sha256.Sum256(cfgJSON)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"

	man := []manifestEntry{{Config: cfgName, RepoTags: []string{o.ref}}}
	for _, d := range cfg.RootFS.DiffIDs {
		man[0].Layers = append(man[0].Layers, strings.TrimPrefix(d, "sha256:")+"/layer.tar")
	}
	manJSON, err := json.Marshal(man)
	if err != nil {
		return fmt.Errorf("encoding manifest: %w", err)
	}

	part := o.out + ".part"
	f, err := os.Create(part)
	if err != nil {
		return err
	}
	defer os.Remove(part)
	tw := tar.NewWriter(f)
	if err := addBytes(tw, cfgName, cfgJSON, o.created); err != nil {
		return err
	}
	written := map[string]bool{}
	for i, name := range man[0].Layers {
		if written[name] { // the same layer twice: one blob is enough
			continue
		}
		written[name] = true
		if err := addDir(tw, filepath.Dir(name)+"/", o.created); err != nil {
			return err
		}
		if err := addFile(tw, name, layerFiles[i], o.created); err != nil {
			return err
		}
	}
	if err := addBytes(tw, "manifest.json", manJSON, o.created); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", part, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", part, err)
	}
	if err := os.Rename(part, o.out); err != nil {
		return err
	}
	fmt.Printf("mkimage: wrote %s as %s (image id sha256:%s)\n", o.out, o.ref, hex.EncodeToString(cfgSum[:]))
	return nil
}

func parseOwner(s string) (int, int, error) {
	u, g, ok := strings.Cut(s, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("-owner %q is not UID:GID", s)
	}
	return uid, gid, nil
}

// writeLayer writes the layer for src (a directory to pack, or a tar file to
// copy) to file and returns the hex sha256 of its content (the layer's diff ID).
func writeLayer(file, src string, uid, gid int, mtime time.Time) (string, error) {
	st, err := os.Stat(src)
	if err != nil {
		return "", err
	}
	f, err := os.Create(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	w := io.MultiWriter(f, h)
	if st.IsDir() {
		err = packDir(w, src, uid, gid, mtime)
	} else {
		err = copyFile(w, src)
	}
	if err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(w io.Writer, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	_, err = io.Copy(w, in)
	return err
}

// packDir writes the tree under root as a tar stream: lexical order, parents
// before children, directories with a trailing slash, fixed owner and time.
func packDir(w io.Writer, root string, uid, gid int, mtime time.Time) error {
	tw := tar.NewWriter(w)
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths) // WalkDir is lexical per directory; sort makes the whole order explicit
	for _, p := range paths {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if err := packEntry(tw, p, filepath.ToSlash(rel), uid, gid, mtime); err != nil {
			return err
		}
	}
	return tw.Close()
}

func packEntry(tw *tar.Writer, p, name string, uid, gid int, mtime time.Time) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	link := ""
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	case fi.IsDir(), fi.Mode().IsRegular():
	default:
		return fmt.Errorf("%s: unsupported file type %s", p, fi.Mode().Type())
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	hdr.Name = name
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = uid, gid, "", ""
	hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = mtime, time.Time{}, time.Time{}
	hdr.Format = tar.FormatPAX
	hdr.PAXRecords = nil
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	return copyFile(tw, p)
}

func addDir(tw *tar.Writer, name string, mtime time.Time) error {
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX})
}

func addBytes(tw *tar.Writer, name string, b []byte, mtime time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

func addFile(tw *tar.Writer, name, src string, mtime time.Time) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: st.Size(), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
		return err
	}
	return copyFile(tw, src)
}
