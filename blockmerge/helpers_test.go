package blockmerge_test

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
)

// tb is what the helpers need of a *testing.T or *rapid.T.
type tb interface {
	require.TestingT
	Helper()
}

func rec(key string, ts int64, val string) blockmerge.Record {
	return blockmerge.Record{Key: []byte(key), Timestamp: ts, Value: []byte(val)}
}

// readDatasets reads every dataset of block id, keyed "tenant/name"
// (tenant resolved), checking them to the end.
func readDatasets(t tb, s blockmerge.Store, id string) map[string][]blockmerge.Record {
	t.Helper()
	ctx := context.Background()
	r, err := blockmerge.Open(ctx, s, id)
	require.NoError(t, err)
	out := map[string][]blockmerge.Record{}
	for i := range blockmerge.Datasets(r) {
		it, err := blockmerge.DatasetAt(r, ctx, i)
		require.NoError(t, err)
		out[it.Meta().Tenant+"/"+it.Meta().Name] = drain(t, it)
	}
	return out
}

func drain(t tb, it *blockmerge.DatasetIterator) []blockmerge.Record {
	t.Helper()
	var recs []blockmerge.Record
	for it.Next() {
		recs = append(recs, it.Record().Clone())
	}
	require.NoError(t, it.Err())
	return recs
}

func objectBytes(t tb, s blockmerge.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return b
}

func putBytes(t tb, s blockmerge.Store, key string, b []byte) {
	t.Helper()
	require.NoError(t, s.Put(context.Background(), key, bytes.NewReader(b)))
}

func listKeys(t tb, s blockmerge.Store, prefix string) []string {
	t.Helper()
	keys := []string{}
	require.NoError(t, s.List(context.Background(), prefix, func(k string) error {
		keys = append(keys, k)
		return nil
	}))
	return keys
}

// countingStore counts the calls a store receives.
type countingStore struct {
	blockmerge.Store
	mu     sync.Mutex
	ranges int
	sizes  int
	gets   int
}

func (c *countingStore) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.mu.Lock()
	c.ranges++
	c.mu.Unlock()
	return c.Store.GetRange(ctx, key, off, n)
}

func (c *countingStore) Size(ctx context.Context, key string) (int64, error) {
	c.mu.Lock()
	c.sizes++
	c.mu.Unlock()
	return c.Store.Size(ctx, key)
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Store.Get(ctx, key)
}

// l0Segment writes a small multi-tenant level-0 segment.
func l0Segment(t tb, s blockmerge.Store, id string, datasets ...blockmerge.Dataset) compactkit.BlockMeta {
	t.Helper()
	meta, err := blockmerge.WriteBlock(context.Background(), s, blockmerge.BlockInfo{ID: id}, datasets)
	require.NoError(t, err)
	return meta
}
