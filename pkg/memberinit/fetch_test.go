package memberinit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/pkg/objstore"
	"github.com/etcd-operator/etcd-operator/pkg/objstore/objstoretest"
	"github.com/etcd-operator/etcd-operator/pkg/objstore/s3"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// fetchWorld is a store with the snapshot goodSnapshot at key "ns/c-b.db", its SHA-256
// beside it, and the options of a seed that fetches it.
func fetchWorld(t *testing.T) (*s3.Store, FetchOptions, []byte) {
	t.Helper()
	srv := objstoretest.Start(t, "backups")
	cfg := srv.Config(t, "backups", objstoretest.AccessKeyID, objstoretest.SecretAccessKey)
	st, err := s3.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(goodSnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := st.Put(ctx, "ns/c-b.db", bytes.NewReader(good), int64(len(good))); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(good)
	if err := st.PutBytes(ctx, snapshot.SumKey("ns/c-b.db"), []byte(hex.EncodeToString(sum[:])+"  c-b.db\n")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return st, FetchOptions{S3: cfg, Key: "ns/c-b.db", To: filepath.Join(dir, "restore", "snapshot.db"),
		DataDir: filepath.Join(dir, "data")}, good
}

// The snapshot is downloaded to the file member-init restores from, checked against the
// SHA-256 stored beside it, or the one given.
func TestFetchDownloadsAndChecks(t *testing.T) {
	st, o, good := fetchWorld(t)
	sum := sha256.Sum256(good)
	for name, want := range map[string]string{"the stored SHA-256": "", "the backup's SHA-256": hex.EncodeToString(sum[:])} {
		t.Run(name, func(t *testing.T) {
			o := o
			o.SHA256 = want
			os.Remove(o.To)
			if err := Fetch(context.Background(), o, st, io.Discard); err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if got, err := os.ReadFile(o.To); err != nil || !bytes.Equal(got, good) {
				t.Fatalf("%s holds %d bytes (%v), not the snapshot", o.To, len(got), err)
			}
			if _, err := os.Stat(o.To + ".part"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the temporary file is left: %v", err)
			}
		})
	}
}

// A snapshot that is missing, truncated, corrupt, or not the one its backup recorded is
// refused with ErrRestoreFailed, and leaves no file member-init could restore from.
func TestFetchRefusesABadSnapshot(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, st *s3.Store, o *FetchOptions, good []byte)
		words string
	}{
		{"missing", func(t *testing.T, st *s3.Store, o *FetchOptions, _ []byte) { o.Key = "ns/gone.db" }, "NoSuchKey"},
		{"truncated", func(t *testing.T, st *s3.Store, o *FetchOptions, good []byte) {
			if _, err := st.Put(ctx, o.Key, bytes.NewReader(good[:len(good)-100]), -1); err != nil {
				t.Fatal(err)
			}
		}, "snapshot corrupt or truncated"},
		{"a flipped byte", func(t *testing.T, st *s3.Store, o *FetchOptions, good []byte) {
			bad := slices.Clone(good)
			bad[10] ^= 0xff
			if _, err := st.Put(ctx, o.Key, bytes.NewReader(bad), int64(len(bad))); err != nil {
				t.Fatal(err)
			}
		}, "does not match"},
		{"another SHA-256 recorded", func(t *testing.T, st *s3.Store, o *FetchOptions, _ []byte) {
			o.SHA256 = strings.Repeat("ab", 32)
		}, "not the " + strings.Repeat("ab", 32)},
		{"wrong credentials", func(t *testing.T, st *s3.Store, o *FetchOptions, _ []byte) {}, "AccessDenied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, o, good := fetchWorld(t)
			tc.setup(t, st, &o, good)
			if tc.name == "wrong credentials" {
				o.S3.CredentialsDir = objstoretest.Credentials(t, "AKIDWRONG", "wrong")
				var err error
				if st, err = s3.Open(o.S3); err != nil {
					t.Fatal(err)
				}
			}
			err := Fetch(ctx, o, st, io.Discard)
			if !errors.Is(err, ErrRestoreFailed) || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("Fetch = %v, want ErrRestoreFailed with %q", err, tc.words)
			}
			for _, f := range []string{o.To, o.To + ".part"} {
				if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s is left: %v", f, err)
				}
			}
			msg := filepath.Join(t.TempDir(), "msg")
			if err := WriteTermination(msg, err); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(msg); !strings.HasPrefix(string(b), RestoreFailedPrefix) {
				t.Errorf("termination message %q", b)
			}
		})
	}
}

// A seed that was restored already (its data dir holds a member) fetches nothing: its pod
// restarts even once the snapshot and its backup are gone.
func TestFetchSkipsARestoredSeed(t *testing.T) {
	st, o, _ := fetchWorld(t)
	if err := os.MkdirAll(filepath.Join(o.DataDir, "member", "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	o.Key = "ns/gone.db"
	if err := Fetch(context.Background(), o, st, io.Discard); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if _, err := os.Stat(o.To); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s written: %v", o.To, err)
	}
}

// The init container's command line reads back as written.
func TestFetchArgsRoundTrip(t *testing.T) {
	o := FetchOptions{S3: objstore.Config{Endpoint: "https://s3.example.com", Bucket: "b", Region: "eu-west-3", PathStyle: true,
		CredentialsDir: "/etc/etcd-s3/credentials", CAFile: "/etc/etcd-s3/ca/ca.crt"}, Key: "p/ns/c-b.db", To: "/restore/snapshot.db",
		SHA256: strings.Repeat("0f", 32), DataDir: "/var/lib/etcd/data", TerminationLog: DefaultTerminationLog}
	got, err := ParseFetch(o.Args())
	if err != nil || got != o {
		t.Fatalf("ParseFetch(%q) = %+v, %v; want %+v", o.Args(), got, err, o)
	}
	if _, err := ParseFetch(append(o.Args(), "--sha256=xyz")); err == nil {
		t.Error("ParseFetch accepted a SHA-256 that is not one")
	}
}
