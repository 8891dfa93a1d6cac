package objstore_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/go-kit/log"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	thanos "github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/s3"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/objstore"
	"github.com/compactkit/compactkit/blockmerge/storetest"
)

func TestInMemBucketConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) blockmerge.Store {
		return objstore.New(thanos.NewInMemBucket())
	})
}

func TestS3Conformance(t *testing.T) {
	srv := newFakeS3(t)
	storetest.Run(t, func(t *testing.T) blockmerge.Store { return srv.bucket(t) })
}

// fakeS3 is an S3-compatible server (gofakes3, in memory) on loopback.
type fakeS3 struct {
	backend *s3mem.Backend
	url     *url.URL
	buckets atomic.Int64
}

func newFakeS3(t testing.TB) *fakeS3 {
	t.Helper()
	backend := s3mem.New()
	faker := gofakes3.New(backend).Server()
	// gofakes3 insists on a Content-Length header, which Go's HTTP client
	// leaves out (sending the body chunked) when it cannot tell that a
	// body is empty; real S3 accepts such requests. Buffer chunked PUT
	// bodies to give them a length.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.ContentLength < 0 {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.TransferEncoding = nil
			r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
		faker.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeS3{backend: backend, url: u}
}

// bucket creates a new, empty bucket and returns a store over it, through
// objstore's S3 provider (path-style requests, fake credentials).
func (f *fakeS3) bucket(t testing.TB) *objstore.Store {
	t.Helper()
	name := "bucket-" + strconv.FormatInt(f.buckets.Add(1), 10)
	if err := f.backend.CreateBucket(name); err != nil {
		t.Fatal(err)
	}
	cfg := s3.DefaultConfig
	cfg.Bucket = name
	cfg.Endpoint = f.url.Host
	cfg.Region = "us-east-1"
	cfg.Insecure = true
	cfg.AccessKey = "fake-access-key"
	cfg.SecretKey = "fake-secret-key"
	cfg.BucketLookupType = s3.PathLookup
	cfg.MaxRetries = 1
	b, err := s3.NewBucketWithConfig(log.NewNopLogger(), cfg, "blockmerge-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return objstore.New(b)
}
