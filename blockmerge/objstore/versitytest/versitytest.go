// Package versitytest starts a real S3-compatible server for tests:
// versitygw's POSIX gateway (github.com/versity/versitygw, v1.8.0) on
// loopback over a temporary directory whose subdirectories are the
// buckets. Tests get stores over new buckets through thanos-io/objstore's
// S3 provider, and a plain S3 client to see what a store cannot
// (unfinished multipart uploads).
//
// The binary is looked up on PATH, then in $(go env GOPATH)/bin. When it
// is absent, [Start] fails the test if the environment variable
// COMPACTKIT_REQUIRE_S3 is set (CI sets it, after building the server)
// and skips it otherwise, saying so.
package versitytest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/thanos-io/objstore/providers/s3"

	"github.com/compactkit/compactkit/blockmerge/objstore"
)

// requireEnv names the environment variable that makes a missing server
// fail the tests instead of skipping them.
const requireEnv = "COMPACTKIT_REQUIRE_S3"

// install is the command that builds the server.
const install = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// The server's single account.
const (
	access = "compactkit-test"
	secret = "compactkit-test-secret"
)

// Server is a running versitygw.
type Server struct {
	dir            string
	endpoint       string
	access, secret string
	buckets        *atomic.Int64 // shared with the servers Through returns
}

// bucketEnv names the environment variable through which a process reaches
// a bucket of a server another process started: see [Server.Env] and
// [FromEnv].
const bucketEnv = "COMPACTKIT_VERSITY_BUCKET"

// Env returns the environment variable (COMPACTKIT_VERSITY_BUCKET=...)
// that gives a process the bucket on this server: its address, account
// and name.
func (v *Server) Env(bucket string) string {
	return bucketEnv + "=" + strings.Join([]string{v.endpoint, v.access, v.secret, bucket}, ",")
}

// FromEnv returns a conditional store over the bucket named by
// COMPACTKIT_VERSITY_BUCKET (set from [Server.Env] by the process that
// started the server), or fails the test if it is not set or malformed.
func FromEnv(t testing.TB, partSize uint64, opts ...objstore.Option) *objstore.ConditionalStore {
	t.Helper()
	f := strings.Split(os.Getenv(bucketEnv), ",")
	if len(f) != 4 {
		t.Fatalf("%s=%q: want endpoint,access,secret,bucket", bucketEnv, os.Getenv(bucketEnv))
	}
	v := &Server{endpoint: f[0], access: f[1], secret: f[2]}
	return v.conditionalStoreOf(t, f[3], partSize, opts...)
}

// binary finds versitygw on PATH or in the Go bin directory.
func binary() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return "", err
	}
	p := filepath.Join(string(bytes.TrimSpace(out)), "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// Start starts a server for the test; it stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		msg := "versitygw not found (build it: " + install + "): " + err.Error()
		if os.Getenv(requireEnv) != "" {
			t.Fatal(msg)
		}
		// Skipped, saying so, only outside CI: CI builds the server and
		// sets COMPACTKIT_REQUIRE_S3, which makes a missing server a failure above.
		t.Skip("SKIPPED, no real S3 server: " + msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	v := &Server{dir: t.TempDir(), endpoint: addr, access: access, secret: secret, buckets: new(atomic.Int64)}
	cmd := exec.Command(bin, "--access", access, "--secret", secret, "--port", addr, "posix", v.dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// Wait for it to listen (bounded: a server that never starts fails).
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return v
		}
		if i == 1000 {
			t.Fatalf("versitygw did not listen on %s: %v\n%s", addr, err, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Endpoint returns the server's host:port.
func (v *Server) Endpoint() string { return v.endpoint }

// Through returns the server as reached through endpoint (host:port): a
// proxy in front of it, which passes requests on with their Host header
// (it is signed). Its stores and clients go through the proxy, over the
// same buckets.
func (v *Server) Through(endpoint string) *Server {
	return &Server{dir: v.dir, endpoint: endpoint, access: v.access, secret: v.secret, buckets: v.buckets}
}

// newBucket creates a new, empty bucket and returns its name.
func (v *Server) newBucket(t testing.TB) string {
	t.Helper()
	name := "bucket-" + strconv.FormatInt(v.buckets.Add(1), 10)
	if err := os.Mkdir(filepath.Join(v.dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	return name
}

// storeOf returns a store over the bucket name.
func (v *Server) storeOf(t testing.TB, name string, partSize uint64, opts ...objstore.Option) *objstore.Store {
	t.Helper()
	cfg := s3.DefaultConfig
	cfg.Bucket = name
	cfg.Endpoint = v.endpoint
	cfg.Region = "us-east-1"
	cfg.Insecure = true
	cfg.AccessKey = v.access
	cfg.SecretKey = v.secret
	cfg.BucketLookupType = s3.PathLookup
	if partSize > 0 {
		cfg.PartSize = partSize
	}
	b, err := s3.NewBucketWithConfig(log.NewNopLogger(), cfg, "compactkit-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return objstore.New(b, opts...)
}

// ConditionalStore returns a store over a new bucket, through objstore's
// S3 provider with the given part size (0: the provider's default), with a
// create-if-absent (If-None-Match: *), and the bucket's name. Its Store
// field is the store without the create-if-absent.
func (v *Server) ConditionalStore(t testing.TB, partSize uint64, opts ...objstore.Option) (*objstore.ConditionalStore, string) {
	t.Helper()
	name := v.newBucket(t)
	return v.conditionalStoreOf(t, name, partSize, opts...), name
}

// conditionalStoreOf returns a conditional store over the bucket name.
func (v *Server) conditionalStoreOf(t testing.TB, name string, partSize uint64, opts ...objstore.Option) *objstore.ConditionalStore {
	t.Helper()
	return objstore.NewConditional(v.storeOf(t, name, partSize, opts...), objstore.S3ConditionalPut(v.Client(t), name))
}

// Client returns a plain S3 client of the server.
func (v *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(v.endpoint, &minio.Options{Creds: credentials.NewStaticV4(v.access, v.secret, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
