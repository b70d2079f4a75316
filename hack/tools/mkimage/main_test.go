package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTree creates a small root filesystem: a binary, a symlink and a sticky /tmp.
func writeTree(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{"usr/local/bin", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "usr/local/bin/etcd"), []byte("#binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("etcd", filepath.Join(dir, "usr/local/bin/alias")); err != nil {
		t.Fatal(err)
	}
}

// readTar returns name -> content (and headers) of a tar stream.
func readTar(t *testing.T, r io.Reader) (map[string][]byte, map[string]*tar.Header, []string) {
	t.Helper()
	files, hdrs := map[string][]byte{}, map[string]*tar.Header{}
	var order []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, hdrs, order
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], hdrs[h.Name] = b, h
		order = append(order, h.Name)
	}
}

func TestBuildIsDeterministicDockerArchive(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	writeTree(t, root)
	args := func(out string) []string {
		return []string{"-o", out, "-ref", "gcr.io/etcd-development/etcd:v3.6.16", "-layer", root,
			"-env", "PATH=/usr/local/bin", "-workdir", "/var/lib/etcd", "-cmd", "/usr/local/bin/etcd", "-user", "65532:65532"}
	}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	if err := run(args(a)); err != nil {
		t.Fatal(err)
	}
	// a different modification time on disk must not change the output
	if err := os.Chtimes(filepath.Join(root, "usr/local/bin/etcd"), testTime, testTime); err != nil {
		t.Fatal(err)
	}
	if err := run(args(b)); err != nil {
		t.Fatal(err)
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Fatal("two builds of the same inputs differ")
	}

	files, _, _ := readTar(t, bytes.NewReader(ab))
	var man []manifestEntry
	if err := json.Unmarshal(files["manifest.json"], &man); err != nil {
		t.Fatal(err)
	}
	if len(man) != 1 || len(man[0].RepoTags) != 1 || man[0].RepoTags[0] != "gcr.io/etcd-development/etcd:v3.6.16" || len(man[0].Layers) != 1 {
		t.Fatalf("manifest = %+v", man)
	}
	cfgBytes := files[man[0].Config]
	sum := sha256.Sum256(cfgBytes)
	if man[0].Config != hex.EncodeToString(sum[:])+".json" {
		t.Fatalf("config %s is not named by its digest", man[0].Config)
	}
	var cfg imageConfig
	if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Config.User != "65532:65532" || cfg.Config.WorkingDir != "/var/lib/etcd" ||
		strings.Join(cfg.Config.Cmd, " ") != "/usr/local/bin/etcd" || strings.Join(cfg.Config.Env, " ") != "PATH=/usr/local/bin" {
		t.Fatalf("config = %+v", cfg)
	}
	layer := files[man[0].Layers[0]]
	lsum := sha256.Sum256(layer)
	if len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(lsum[:]) {
		t.Fatalf("diff_ids %v do not match the layer", cfg.RootFS.DiffIDs)
	}

	lfiles, lhdrs, order := readTar(t, bytes.NewReader(layer))
	want := []string{"tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/alias", "usr/local/bin/etcd"}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("layer entries %v, want %v", order, want)
	}
	if string(lfiles["usr/local/bin/etcd"]) != "#binary" || lhdrs["usr/local/bin/etcd"].Mode&0o777 != 0o755 {
		t.Fatalf("etcd entry %+v", lhdrs["usr/local/bin/etcd"])
	}
	if h := lhdrs["usr/local/bin/alias"]; h.Typeflag != tar.TypeSymlink || h.Linkname != "etcd" {
		t.Fatalf("alias entry %+v", h)
	}
	if h := lhdrs["tmp/"]; h.Mode&0o1777 != 0o1777 {
		t.Fatalf("tmp mode %o, want sticky 1777", h.Mode)
	}
	for name, h := range lhdrs {
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || !h.ModTime.Equal(epoch) {
			t.Fatalf("%s: owner %d:%d %q time %v", name, h.Uid, h.Gid, h.Uname, h.ModTime)
		}
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"no layer":  {"-o", filepath.Join(dir, "x.tar"), "-ref", "a:b"},
		"no ref":    {"-o", filepath.Join(dir, "x.tar"), "-layer", dir},
		"bad env":   {"-o", filepath.Join(dir, "x.tar"), "-ref", "a:b", "-layer", dir, "-env", "NOEQUALS"},
		"bad owner": {"-o", filepath.Join(dir, "x.tar"), "-ref", "a:b", "-layer", dir, "-owner", "x"},
		"extra arg": {"-o", filepath.Join(dir, "x.tar"), "-ref", "a:b", "-layer", dir, "stray"},
	} {
		if err := run(args); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

var (
	epoch    = time.Unix(0, 0)
	testTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
)
