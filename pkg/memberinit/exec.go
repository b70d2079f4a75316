package memberinit

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Install copies the running binary to dest, for a container of another image (etcd's, which
// has no shell) to run member-init from a shared volume. The copy is written beside dest and
// renamed into place, so a restarted install never leaves a half-written binary behind.
func Install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the running binary: %w", err)
	}
	return installFrom(self, dest)
}

func installFrom(src, dest string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("opening %s: %w", src, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*")
	if err != nil {
		return fmt.Errorf("installing %s: %w", dest, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, in); err != nil {
		return fmt.Errorf("copying %s to %s: %w", src, tmp.Name(), err)
	}
	if err = tmp.Chmod(0o755); err != nil {
		return fmt.Errorf("installing %s: %w", dest, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("installing %s: %w", dest, err)
	}
	if err = os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("installing %s: %w", dest, err)
	}
	return nil
}

// Exec replaces the process with o.Exec (etcd), keeping the environment. It returns only if
// the exec failed.
func Exec(o Options) error {
	if len(o.Exec) == 0 {
		return errors.New("no command to run")
	}
	err := syscall.Exec(o.Exec[0], o.Exec, os.Environ())
	return fmt.Errorf("running %s: %w", o.Exec[0], err)
}

// serveLiveness answers probes on addr while the member waits: pathAndQuery (the liveness
// probe) as alive, anything else as unavailable, so that the readiness probe keeps the member
// out of its client Service. stop closes the listener, freeing addr for etcd.
func serveLiveness(addr, pathAndQuery string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	// HTTP/2 without TLS too: the operator asks every running member pod for its status over
	// gRPC, and an HTTP/1 server leaves that call hanging until it times out, where an
	// HTTP/2 503 fails it at once.
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols:         protocols,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.RequestURI() == pathAndQuery {
				fmt.Fprintln(w, "alive: etcd has not started yet (waiting to be added, or restoring the seed)")
				return
			}
			http.Error(w, "etcd has not started yet (waiting to be added, or restoring the seed)", http.StatusServiceUnavailable)
		}),
	}
	go srv.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed once stop runs.
	return func() { srv.Close() }, nil
}
