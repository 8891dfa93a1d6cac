package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/objstore/versitytest"
	"github.com/compactkit/compactkit/blockmerge/storetest"
)

// The conformance suite against a real S3 server, with the conditional
// put (If-None-Match: *): of concurrent creates of one key exactly one
// wins — the property the bucket log relies on, checked on the server
// before anything relies on it.
func TestVersityConformance(t *testing.T) {
	v := versitytest.Start(t)
	storetest.Run(t, func(t *testing.T) blockmerge.Store {
		s, _ := v.ConditionalStore(t, 5<<20)
		return s
	})
}

// A put cancelled while its multipart upload runs leaves no parts on the
// server: not only nothing List shows, nothing at all.
func TestVersityCancelledUploadLeavesNoParts(t *testing.T) {
	v := versitytest.Start(t)
	cs, name := v.ConditionalStore(t, 5<<20) // 5 MiB parts: a 24 MiB object is multipart
	s := cs.Store
	ctx, cancel := context.WithCancel(context.Background())
	data := bytes.Repeat([]byte("compactkit"), 24<<20/10)
	r := &cancelAfter{r: bytes.NewReader(data), after: 12 << 20, cancel: cancel}
	err := s.Put(ctx, "blocks/large", r)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v, want context.Canceled", err)
	}
	var uploads []string
	for u := range v.Client(t).ListIncompleteUploads(context.Background(), name, "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		uploads = append(uploads, fmt.Sprintf("%s (%d bytes)", u.Key, u.Size))
	}
	if len(uploads) > 0 {
		t.Fatalf("unfinished multipart uploads left on the server: %v", uploads)
	}
}

// cancelAfter reads r and cancels after after bytes, as a merge whose
// context ends mid-upload.
type cancelAfter struct {
	r      *bytes.Reader
	after  int
	read   int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.read >= c.after {
		c.cancel()
	}
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

// BenchmarkMergeS3 runs storetest.MergeBenchmark on a real S3 server
// (versitygw's POSIX gateway on loopback), through objstore's S3 provider
// with 16 MiB parts.
func BenchmarkMergeS3(b *testing.B) {
	s, _ := versitytest.Start(b).ConditionalStore(b, 16<<20)
	storetest.MergeBenchmark(b, s.Store)
}
