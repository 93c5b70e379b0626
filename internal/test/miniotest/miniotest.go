// Package miniotest runs a real MinIO server on 127.0.0.1 for tests: a fresh data
// directory per server, random credentials, stopped by PID when the test ends.
package miniotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// Version of the MinIO server hack/tools.sh caches.
const Version = "v0.0.0-20260212201848-7aac2a2c5b7c"

// Binary returns the cached MinIO server: $MINIO_BINARY, else
// <cache>/minio-<Version>/minio with the cache root of hack/tools.sh. When it is missing
// the test is skipped, unless CI is set: then it fails.
func Binary(t testing.TB) string {
	t.Helper()
	p := os.Getenv("MINIO_BINARY")
	if p == "" {
		p = filepath.Join(cacheDir(), "minio-"+Version, "minio")
	}
	if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
		testenv.Missing(t, "MinIO server %s not found (run `bash hack/tools.sh minio`; MINIO_BINARY or ETCD_OPERATOR_CACHE override it)", p)
	}
	return p
}

func cacheDir() string { return testenv.CacheDir() }

// Server is a running MinIO.
type Server struct {
	Addr      string // host:port
	AccessKey string
	SecretKey string
	Region    string
	DataDir   string
	cmd       *exec.Cmd
	done      chan struct{}
}

// Endpoint is the server's URL.
func (s *Server) Endpoint() string { return "http://" + s.Addr }

// PID of the server process.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Start runs a MinIO server on 127.0.0.1 and waits until it is ready. It is stopped
// (SIGTERM, then SIGKILL) when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartOn(t, "127.0.0.1")
}

// StartOn is Start listening on host, e.g. the bench network's address so that pods reach
// it (only inside a network namespace the test created: never a host interface).
func StartOn(t testing.TB, host string) *Server {
	t.Helper()
	return startIn(t, host, t.TempDir())
}

// StartInMemory is Start with the server's data in memory (a directory of its own under
// /dev/shm, removed when the test ends). It models an object store that does not share
// this machine's disk, as a real S3 endpoint does not share a node's: benchmarks that
// compare a path through S3 with one through the local disk would otherwise charge the
// S3 side with this machine's disk a second time. Without /dev/shm it is Start.
func StartInMemory(t testing.TB) *Server {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "miniotest-")
	if err != nil {
		t.Logf("no memory-backed directory (%v): MinIO keeps its data on disk", err)
		return Start(t)
	}
	// Registered before the server's own cleanup, so it runs after the server stopped.
	t.Cleanup(func() { os.RemoveAll(dir) })
	return startIn(t, "127.0.0.1", dir)
}

func startIn(t testing.TB, host, dataDir string) *Server {
	t.Helper()
	bin := Binary(t)
	s := &Server{
		AccessKey: "test-" + randHex(t, 6),
		SecretKey: randHex(t, 20),
		Region:    "us-east-1",
		DataDir:   dataDir,
		done:      make(chan struct{}),
	}
	// Two ports (API, console); a just-freed port could be taken again, so retry.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		api, console := testenv.FreePort(t), testenv.FreePort(t)
		s.Addr = net.JoinHostPort(host, strconv.Itoa(api))
		if lastErr = s.start(t, bin, console); lastErr == nil {
			return s
		}
	}
	t.Fatalf("MinIO did not start: %v", lastErr)
	return nil
}

func (s *Server) start(t testing.TB, bin string, consolePort int) error {
	logPath := filepath.Join(t.TempDir(), "minio.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "server", "--quiet", "--address", s.Addr,
		"--console-address", fmt.Sprintf("127.0.0.1:%d", consolePort), s.DataDir)
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_REGION="+s.Region,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		"MINIO_CI_CD=1",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so a stop never reaches the test binary. Pdeathsig kills
	// it if the test binary dies without running cleanups (e.g. a -timeout panic).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(s.done) }()
	t.Cleanup(s.Stop)
	deadline := time.Now().Add(60 * time.Second)
	hc := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-s.done:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("minio exited: %s", tail(string(b)))
		default:
		}
		resp, err := hc.Get(s.Endpoint() + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			s.Stop()
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("minio not ready after 60s: %v; log: %s", err, tail(string(b)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the server by its PID: SIGTERM, then SIGKILL after 10 s.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	testenv.StopProcess(s.cmd.Process, s.done, 10*time.Second)
}

// Client is an admin client of the server.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Addr, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: s.Region})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// MakeBucket creates a bucket.
func (s *Server) MakeBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Client(t).MakeBucket(ctx, name, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		t.Fatalf("make bucket %s: %v", name, err)
	}
}

// ReadObject is the object bucket/key, read whole, and what its Stat says.
func (s *Server) ReadObject(t testing.TB, bucket, key string) ([]byte, minio.ObjectInfo) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	obj, err := s.Client(t).GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	info, err := obj.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data, info
}

// AWSCredentialsFile and AWSConfigFile are the server's credentials in the format of a
// CoreOS awsSecret.
func (s *Server) AWSCredentialsFile() string {
	return fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", s.AccessKey, s.SecretKey)
}
func (s *Server) AWSConfigFile() string { return fmt.Sprintf("[default]\nregion = %s\n", s.Region) }

func randHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
