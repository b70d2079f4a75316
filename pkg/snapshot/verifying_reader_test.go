//go:build linux

package snapshot

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"
)

// smallSnapshot is a stream of the shape of a snapshot: random sectors followed by their
// SHA-256.
func smallSnapshot() []byte {
	db := make([]byte, 64*sectorSize)
	rand.Read(db)
	sum := sha256.Sum256(db)
	return append(db, sum[:]...)
}

// readSizes are the sizes of the reads the tests make of a verifyingReader: a byte at a time,
// shorter than the hash held back, as long, just longer, and the sizes io.Copy and minio-go's
// signer ask for.
var readSizes = []int{1, 7, sha256.Size - 1, sha256.Size, sha256.Size + 1, 4096, 64 << 10}

// readIn reads r to its end or its first error in reads of size bytes, and returns what it gave.
func readIn(r io.Reader, size int) ([]byte, error) {
	var got []byte
	p := make([]byte, size)
	for {
		n, err := r.Read(p)
		got = append(got, p[:n]...)
		if err != nil {
			return got, err
		}
	}
}

// A good snapshot is given whole and unchanged, in reads of every size, from sources that give
// it a byte at a time or with io.EOF on its last bytes, with its size announced or not; io.EOF
// ends it, and again after.
func TestVerifyingReaderGivesAGoodSnapshotWhole(t *testing.T) {
	good := smallSnapshot()
	sources := map[string]func() io.Reader{
		"whole":                     func() io.Reader { return bytes.NewReader(good) },
		"a byte at a time":          func() io.Reader { return iotest.OneByteReader(bytes.NewReader(good)) },
		"io.EOF with the last ones": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(good)) },
	}
	for name, source := range sources {
		for _, announced := range []int64{-1, int64(len(good))} {
			for _, size := range readSizes {
				t.Run(fmt.Sprintf("%s, announced %d, reads of %d", name, announced, size), func(t *testing.T) {
					r := newVerifyingReader(source(), announced, "the stream")
					got, err := readIn(r, size)
					if err != io.EOF || !bytes.Equal(got, good) {
						t.Fatalf("gave %d of the %d bytes, then %v; want them all, then io.EOF", len(got), len(good), err)
					}
					if n, err := r.Read(make([]byte, size)); n != 0 || err != io.EOF {
						t.Errorf("read after the end: %d, %v; want io.EOF", n, err)
					}
				})
			}
		}
	}
}

// A snapshot that fails the check, or that runs past or ends short of the size it announced,
// never has its last sha256.Size bytes given: the check's error comes instead, and again at
// every read after it. Read a byte at a time, none of them comes before the stream's end.
func TestVerifyingReaderNeverGivesTheEndOfAFailedSnapshot(t *testing.T) {
	good := smallSnapshot()
	type stream struct {
		data      []byte
		announced int64
	}
	cases := map[string]stream{
		"running past the size announced":    {good, int64(len(good) - sectorSize)},
		"ending short of the size announced": {good, int64(len(good) + sectorSize)},
	}
	for name, data := range corruptions(good) {
		cases[name] = stream{data, -1}
		cases[name+", announced"] = stream{data, int64(len(data))}
	}
	for name, c := range cases {
		for _, size := range readSizes {
			t.Run(fmt.Sprintf("%s, reads of %d", name, size), func(t *testing.T) {
				r := newVerifyingReader(bytes.NewReader(c.data), c.announced, "the stream")
				got, err := readIn(r, size)
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("gave %d bytes, then %v; want an error wrapping ErrCorrupt", len(got), err)
				}
				limit := len(c.data)
				if c.announced >= 0 {
					limit = min(limit, int(c.announced))
				}
				if len(got) > limit-sha256.Size || !bytes.Equal(got, c.data[:len(got)]) {
					t.Errorf("gave %d bytes of %d (%d announced); want at most all but the last %d, unchanged",
						len(got), len(c.data), c.announced, sha256.Size)
				}
				if n, again := r.Read(make([]byte, size)); n != 0 || again != err {
					t.Errorf("read after the error: %d, %v; want the same error", n, again)
				}
			})
		}
	}
}

// An error of the stream is passed on as it is, with nothing of the bytes held back.
func TestVerifyingReaderPassesOnTheStreamsErrors(t *testing.T) {
	good := smallSnapshot()
	broken := errors.New("connection reset")
	r := newVerifyingReader(io.MultiReader(bytes.NewReader(good[:1000]), iotest.ErrReader(broken)), int64(len(good)), "the stream")
	got, err := readIn(r, 4096)
	if !errors.Is(err, broken) || errors.Is(err, ErrCorrupt) || len(got) > 1000-sha256.Size {
		t.Fatalf("gave %d bytes, then %v; want at most %d, then the stream's error", len(got), err, 1000-sha256.Size)
	}
}
