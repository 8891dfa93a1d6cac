package admin_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/blockmerge"
)

// The consistency check finds the objects nothing accounts for and the
// live blocks whose objects are gone; removal takes only the orphans it
// is asked to remove.
func TestFsck(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	for _, id := range []string{"seg-1", "seg-2", "seg-3", "seg-4"} { // seg-5's object is missing
		require.NoError(t, store.Put(ctx, ck.ObjectKey(id), strings.NewReader(id)))
	}
	attempt := ck.ObjectKey(ck.OutputID(n.job.Job, n.job.Token, 0)) // an attempt in progress writing
	require.NoError(t, store.Put(ctx, attempt, strings.NewReader("partial")))
	require.NoError(t, store.Put(ctx, "blocks/stray-1", strings.NewReader("lost")))

	srv := httptest.NewServer(admin.New(n.svc, admin.WithStore(store, blockmerge.ObjectLayout), admin.WithAuthorizer(allow)))
	defer srv.Close()
	before := n.snapshot(t)
	var rep admin.FsckReport
	require.Equal(t, 200, call(t, srv, "GET", "/api/fsck", "", nil, &rep))
	require.Equal(t, 6, rep.Objects)
	require.Equal(t, []admin.Object{{Key: "blocks/stray-1", Size: 4}}, rep.Orphans)
	require.Equal(t, []string{"seg-5"}, rep.Missing)

	var res admin.RemoveResult
	body := `{"keys":["blocks/stray-1","blocks/seg-1","` + attempt + `","blocks/never-existed","blocks/stray-1 ","blocks/stray-1"]}`
	require.Equal(t, 200, call(t, srv, "POST", "/api/fsck/remove", body, nil, &res))
	require.Equal(t, []string{"blocks/stray-1"}, res.Removed)
	require.Equal(t, []string{"blocks/seg-1", attempt, "blocks/never-existed", "blocks/stray-1 ", "blocks/stray-1"}, res.Kept,
		"keys never listed are kept, and so is a key named again once removed")
	ok, err := store.Exists(ctx, "blocks/seg-1")
	require.NoError(t, err)
	require.True(t, ok, "a live block's object is never removed")
	require.Equal(t, before, n.snapshot(t), "the check changes no state")

	require.Equal(t, 400, call(t, srv, "POST", "/api/fsck/remove", `{"keys":[]}`, nil, nil))
	require.NoError(t, store.Put(ctx, "blocks/stray-2", strings.NewReader("lost")))
	for _, bad := range []string{"../etc", "blocks//x", "index/stray", "blocks/" + strings.Repeat("k", 1100)} {
		var e struct{ Error string }
		require.Equal(t, 400, call(t, srv, "POST", "/api/fsck/remove", `{"keys":["blocks/stray-2","`+bad+`"]}`, nil, &e), bad)
		require.NotEmpty(t, e.Error)
		ok, err := store.Exists(ctx, "blocks/stray-2")
		require.NoError(t, err)
		require.True(t, ok, "a refused request removes nothing, not even the orphans named before %q", bad)
	}
	ro := httptest.NewServer(admin.New(n.svc, admin.WithStore(store, blockmerge.ObjectLayout)))
	defer ro.Close()
	require.Equal(t, 403, call(t, ro, "POST", "/api/fsck/remove", body, nil, nil), "read-only")
	bare := httptest.NewServer(admin.New(n.svc))
	defer bare.Close()
	require.Equal(t, 404, call(t, bare, "GET", "/api/fsck", "", nil, nil), "no store given")
}

// Under the prefix layout a block is a directory of objects: its
// directory key is never an object of the listing, so it is kept, and no
// object of the live block is touched.
func TestFsckRemovePrefixLayout(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	store, err := blockmerge.NewFileStore(t.TempDir())
	require.NoError(t, err)
	defer store.Close()
	for _, id := range []string{"seg-1", "seg-2", "seg-3", "seg-4", "seg-5"} {
		require.NoError(t, store.Put(ctx, ck.ObjectKey(id)+"/data", strings.NewReader(id)))
	}
	require.NoError(t, store.Put(ctx, "blocks/stray-1/data", strings.NewReader("lost")))
	srv := httptest.NewServer(admin.New(n.svc, admin.WithStore(store, blockmerge.PrefixLayout), admin.WithAuthorizer(allow)))
	defer srv.Close()

	// Keys the file store refuses (a reserved segment, a segment longer
	// than a file name) refuse the whole request: nothing is removed.
	for _, bad := range []string{"blocks/.ck-tmp-1", "blocks/" + strings.Repeat("s", 300)} {
		require.Equal(t, 400, call(t, srv, "POST", "/api/fsck/remove", `{"keys":["blocks/stray-1/data","`+bad+`"]}`, nil, nil), bad)
		ok, err := store.Exists(ctx, "blocks/stray-1/data")
		require.NoError(t, err)
		require.True(t, ok)
	}
	var res admin.RemoveResult
	require.Equal(t, 200, call(t, srv, "POST", "/api/fsck/remove", `{"keys":["blocks/seg-1","blocks/stray-1","blocks/stray-1/data"]}`, nil, &res))
	require.Equal(t, []string{"blocks/stray-1/data"}, res.Removed)
	require.Equal(t, []string{"blocks/seg-1", "blocks/stray-1"}, res.Kept)
	ok, err := store.Exists(ctx, "blocks/seg-1/data")
	require.NoError(t, err)
	require.True(t, ok, "a live block's objects are never removed")
}

// failingStore fails the deletion of one key.
type failingStore struct {
	blockmerge.Store
	key string
}

func (s failingStore) Delete(ctx context.Context, key string) error {
	if key == s.key {
		return errors.New("store unavailable")
	}
	return s.Store.Delete(ctx, key)
}

// A store that fails part way: the answer says exactly what was removed.
func TestFsckRemoveFailsPartWay(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	mem := blockmerge.NewMemStore()
	for _, k := range []string{"blocks/stray-1", "blocks/stray-2", "blocks/stray-3"} {
		require.NoError(t, mem.Put(ctx, k, strings.NewReader("lost")))
	}
	srv := httptest.NewServer(admin.New(n.svc, admin.WithStore(failingStore{mem, "blocks/stray-2"}, blockmerge.ObjectLayout), admin.WithAuthorizer(allow)))
	defer srv.Close()
	var res admin.RemoveResult
	require.Equal(t, 500, call(t, srv, "POST", "/api/fsck/remove", `{"keys":["blocks/stray-1","blocks/stray-2","blocks/stray-3"]}`, nil, &res))
	require.Equal(t, []string{"blocks/stray-1"}, res.Removed)
	require.Contains(t, res.Error, "store unavailable")
	for k, want := range map[string]bool{"blocks/stray-1": false, "blocks/stray-2": true, "blocks/stray-3": true} {
		ok, err := mem.Exists(ctx, k)
		require.NoError(t, err)
		require.Equal(t, want, ok, k)
	}
}
