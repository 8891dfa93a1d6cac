package admin_test

import (
	"context"
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
	body := `{"keys":["blocks/stray-1","blocks/seg-1","` + attempt + `","../etc"]}`
	require.Equal(t, 200, call(t, srv, "POST", "/api/fsck/remove", body, nil, &res))
	require.Equal(t, []string{"blocks/stray-1"}, res.Removed)
	require.Equal(t, []string{"blocks/seg-1", attempt, "../etc"}, res.Kept)
	ok, err := store.Exists(ctx, "blocks/seg-1")
	require.NoError(t, err)
	require.True(t, ok, "a live block's object is never removed")
	require.Equal(t, before, n.snapshot(t), "the check changes no state")

	require.Equal(t, 400, call(t, srv, "POST", "/api/fsck/remove", `{"keys":[]}`, nil, nil))
	ro := httptest.NewServer(admin.New(n.svc, admin.WithStore(store, blockmerge.ObjectLayout)))
	defer ro.Close()
	require.Equal(t, 403, call(t, ro, "POST", "/api/fsck/remove", body, nil, nil), "read-only")
	bare := httptest.NewServer(admin.New(n.svc))
	defer bare.Close()
	require.Equal(t, 404, call(t, bare, "GET", "/api/fsck", "", nil, nil), "no store given")
}
