package snapshot

import (
	"crypto/sha256"
	"fmt"
	"io"
)

// verifyingReader reads a snapshot through a Verifier and holds back its last sha256.Size
// bytes (etcd's hash) until the stream has ended and passed the check. A reader of it never
// sees the whole of a snapshot that failed: where the last bytes would come, the check's error
// comes instead, at that read and every one after it. An upload of a known length therefore
// cannot complete with a snapshot that failed, nor can one of unknown length, which fails on
// the error. size, when not -1, is the length the stream announced: a stream that runs past
// it, or ends short of it, fails the check too.
type verifyingReader struct {
	r    io.Reader
	v    *Verifier
	name string
	size int64
	// held[:nheld] are the last bytes read, not given yet; once checked, held[off:nheld] are
	// still to give.
	held       [sha256.Size]byte
	nheld, off int
	checked    bool
	scratch    [2 * sha256.Size]byte
	err        error // the check's error, once the stream failed it
}

func newVerifyingReader(r io.Reader, size int64, name string) *verifyingReader {
	return &verifyingReader{r: r, v: NewVerifier(), name: name, size: size}
}

func (r *verifyingReader) Read(p []byte) (int, error) {
	if len(p) == 0 && r.err == nil {
		return 0, nil
	}
	for r.err == nil && !r.checked {
		if n, err := r.step(p); n > 0 || err != nil {
			return n, err
		}
	}
	if r.err != nil {
		return 0, r.err
	}
	n := copy(p, r.held[r.off:r.nheld])
	r.off += n
	if r.off == r.nheld {
		return n, io.EOF
	}
	return n, nil
}

// step reads once from the stream, into p behind the bytes held back (into scratch when p is
// too short to hold them), and gives what is no longer among the last sha256.Size bytes seen.
// At the stream's end it checks the snapshot.
func (r *verifyingReader) step(p []byte) (int, error) {
	buf := p
	if len(p) <= sha256.Size {
		buf = r.scratch[:sha256.Size+len(p)]
	}
	k := copy(buf, r.held[:r.nheld])
	n, err := r.r.Read(buf[k:])
	r.v.Write(buf[k : k+n])
	m := k + n
	out := max(m-sha256.Size, 0)
	r.nheld = copy(r.held[:], buf[out:m])
	if len(p) <= sha256.Size {
		copy(p, buf[:out])
	}
	switch {
	case r.size >= 0 && r.v.size > r.size:
		r.err = fmt.Errorf("%w: %s runs past the %d bytes announced", ErrCorrupt, r.name, r.size)
	case err == io.EOF:
		_, r.err = r.v.Check(r.name)
		if r.err == nil && r.size >= 0 && r.v.size != r.size {
			r.err = fmt.Errorf("%w: %s ended after %d of the %d bytes announced", ErrCorrupt, r.name, r.v.size, r.size)
		}
		r.checked = r.err == nil
	case err != nil:
		return 0, err
	}
	if r.err != nil {
		return 0, r.err
	}
	return out, nil
}
