package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/compactkit/compactkit/blockmerge"
)

// ConditionalPut creates the object key from r only if no object has that
// key, atomically on the provider's side; it returns an error wrapping
// [blockmerge.ErrExists] if one does.
type ConditionalPut func(ctx context.Context, key string, r io.Reader) error

// ConditionalStore is a [Store] with a create-if-absent: a
// [blockmerge.ConditionalPutter], on which a bucketlog can run.
type ConditionalStore struct {
	*Store
	put ConditionalPut
}

var _ blockmerge.ConditionalPutter = (*ConditionalStore)(nil)

// NewConditional returns a store over b whose PutIfAbsent is put (see
// [S3ConditionalPut] for S3).
func NewConditional(s *Store, put ConditionalPut) *ConditionalStore {
	return &ConditionalStore{Store: s, put: put}
}

// PutIfAbsent implements [blockmerge.ConditionalPutter].
func (s *ConditionalStore) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	if err := s.prepare(ctx, "put if absent", key); err != nil {
		return err
	}
	return s.put(ctx, key, r)
}

// S3ConditionalPut is the create-if-absent of an S3 bucket: a single PUT
// with "If-None-Match: *" through a minio client of the same bucket. A 412
// Precondition Failed means the object exists; a 409 (a conditional
// request racing another on the same key) is retried. The object is read
// into memory first (conditional puts carry log entries and checkpoints):
// one request, no multipart upload to abort.
func S3ConditionalPut(c *minio.Client, bucket string) ConditionalPut {
	return func(ctx context.Context, key string, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return fmt.Errorf("objstore: put if absent %q: %w", key, err)
		}
		for try := 0; ; try++ {
			opts := minio.PutObjectOptions{DisableMultipart: true}
			opts.SetMatchETagExcept("*")
			_, err = c.PutObject(ctx, bucket, key, bytes.NewReader(data), int64(len(data)), opts)
			resp := minio.ToErrorResponse(err)
			switch {
			case err == nil:
				return nil
			case resp.StatusCode == http.StatusPreconditionFailed:
				return fmt.Errorf("objstore: put if absent %q: %w", key, blockmerge.ErrExists)
			case resp.StatusCode == http.StatusConflict && try < 8:
				select {
				case <-time.After(time.Duration(try+1) * 10 * time.Millisecond):
				case <-ctx.Done():
					return fmt.Errorf("objstore: put if absent %q: %w", key, ctx.Err())
				}
			default:
				return fmt.Errorf("objstore: put if absent %q: %w", key, errors.Join(err))
			}
		}
	}
}
