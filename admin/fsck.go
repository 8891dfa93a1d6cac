package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/scheduler"
)

// WithStore gives the handler the object store and its block layout, for
// the consistency check between the index and the store (GET api/fsck)
// and the removal of orphans on explicit request (POST api/fsck/remove).
func WithStore(s blockmerge.Store, layout blockmerge.Layout) Option {
	return func(h *Handler) { h.store, h.layout = s, layout }
}

// Object is an object of the store, with its size.
type Object struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
}

// FsckReport is what the consistency check found.
type FsckReport struct {
	// Objects is the number of objects under the blocks prefix.
	Objects int `json:"objects"`
	// Orphans are objects no live block, tombstone or attempt in progress
	// accounts for. An object written by an ingest whose blocks are not
	// yet added looks orphaned too: remove only objects reported orphaned
	// by two checks well apart.
	Orphans []Object `json:"orphans"`
	// Missing are live blocks whose objects are absent.
	Missing []string `json:"missing"`
}

// accounted is what the state accounts for: exact keys and key prefixes.
type accounted struct {
	keys     map[string]bool
	prefixes map[string]bool
}

func (a *accounted) block(layout blockmerge.Layout, id string) {
	if layout == blockmerge.PrefixLayout {
		a.prefixes[ck.ObjectKey(id)+"/"] = true
	} else {
		a.keys[ck.ObjectKey(id)] = true
	}
}

// covers reports whether key is accounted for: the key itself or any of
// its '/'-ending ancestors.
func (a *accounted) covers(key string) bool {
	if a.keys[key] {
		return true
	}
	for i := 0; i < len(key); i++ {
		if key[i] == '/' && a.prefixes[key[:i+1]] {
			return true
		}
	}
	return false
}

// check compares the index with the store.
func (h *Handler) check(ctx context.Context) (*FsckReport, error) {
	if h.store == nil {
		return nil, notFound{fmt.Errorf("fsck: this handler has no object store (see admin.WithStore)")}
	}
	if _, err := h.svc.Read(ctx); err != nil { // on the leader, up to date
		return nil, err
	}
	f := h.svc.FSM()
	acc := &accounted{keys: map[string]bool{}, prefixes: map[string]bool{}}
	view := f.Index()
	live := view.Blocks("", 0)
	for _, b := range live {
		acc.block(h.layout, b.ID)
	}
	for _, t := range view.Tombstones(ck.Tombstone{}, 0) {
		if t.Kind == ck.TombstonePrefix {
			acc.prefixes[t.Target] = true
		} else {
			acc.block(h.layout, t.Target)
		}
	}
	view.Close()
	// Attempts in progress write under their own prefix.
	for cursor := ""; ; {
		jobs, next := f.Jobs(scheduler.Filter{Status: ck.StatusInProgress}, cursor, scheduler.MaxListLimit)
		for _, js := range jobs {
			acc.prefixes[ck.AttemptPrefix(js.Name, js.Token)] = true
		}
		if next == "" {
			break
		}
		cursor = next
	}
	rep := &FsckReport{Orphans: []Object{}, Missing: []string{}}
	var keys []string
	if err := h.store.List(ctx, ck.BlockPrefix, func(k string) error { keys = append(keys, k); return nil }); err != nil {
		return nil, err
	}
	rep.Objects = len(keys)
	for _, k := range keys {
		if !acc.covers(k) {
			size, err := h.store.Size(ctx, k)
			if err != nil {
				size = -1
			}
			rep.Orphans = append(rep.Orphans, Object{Key: k, Size: size})
		}
	}
	for _, b := range live {
		key := ck.ObjectKey(b.ID)
		if h.layout == blockmerge.PrefixLayout {
			i, _ := slices.BinarySearch(keys, key+"/")
			if i == len(keys) || !strings.HasPrefix(keys[i], key+"/") {
				rep.Missing = append(rep.Missing, b.ID)
			}
		} else if _, ok := slices.BinarySearch(keys, key); !ok {
			rep.Missing = append(rep.Missing, b.ID)
		}
	}
	return rep, nil
}

func (h *Handler) fsck(r *http.Request) (any, error) { return h.check(r.Context()) }

// RemoveRequest names the orphans to remove.
type RemoveRequest struct {
	Keys []string `json:"keys"`
}

// RemoveResult says what was removed, and what was kept: a key that a
// fresh check does not find orphaned — no longer an orphan, or never an
// object of the store's listing. Removed lists exactly the objects
// deleted; Error, on a failure part way (a store that fails), says why
// the rest were not tried.
type RemoveResult struct {
	Removed []string `json:"removed"`
	Kept    []string `json:"kept"`
	Error   string   `json:"error,omitempty"`
}

// fsckRemove removes the given objects that a fresh check still finds
// orphaned; it never removes anything it was not asked to. Every key is
// checked before anything is removed: a key that is not a valid key of
// the store under the blocks prefix refuses the whole request (400).
func (h *Handler) fsckRemove(w http.ResponseWriter, r *http.Request) {
	if !h.commandAllowed(w, r, "fsck-remove") {
		return
	}
	var req RemoveRequest
	if err := decodeBody(r, &req); err != nil {
		fail(w, err)
		return
	}
	if len(req.Keys) == 0 {
		fail(w, badf("fsck-remove: name the keys to remove"))
		return
	}
	if h.store == nil {
		fail(w, notFound{fmt.Errorf("fsck-remove: this handler has no object store (see admin.WithStore)")})
		return
	}
	ctx := r.Context()
	for _, k := range req.Keys {
		if err := h.removable(ctx, k); err != nil {
			fail(w, err)
			return
		}
	}
	rep, err := h.check(ctx)
	if err != nil {
		fail(w, err)
		return
	}
	orphans := make(map[string]bool, len(rep.Orphans))
	for _, o := range rep.Orphans {
		orphans[o.Key] = true
	}
	res := RemoveResult{Removed: []string{}, Kept: []string{}}
	for _, k := range req.Keys {
		if !orphans[k] {
			res.Kept = append(res.Kept, k)
			continue
		}
		if err := h.store.Delete(ctx, k); err != nil {
			h.log.Warn("admin: orphans removed, then a removal failed", "removed", len(res.Removed), "key", k, "err", err, "from", r.RemoteAddr)
			res.Error = fmt.Sprintf("fsck-remove %q: %v", k, err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(res)
			return
		}
		delete(orphans, k) // named twice, removed once
		res.Removed = append(res.Removed, k)
	}
	h.log.Info("admin: orphans removed", "removed", len(res.Removed), "kept", len(res.Kept), "from", r.RemoteAddr)
	writeJSON(w, res)
}

// removable checks a key named for removal: a valid key under the blocks
// prefix that the store accepts (asking whether it exists, which changes
// nothing).
func (h *Handler) removable(ctx context.Context, key string) error {
	if err := blockmerge.ValidateKey(key); err != nil {
		return badRequest{fmt.Errorf("fsck-remove: %w", err)}
	}
	if !strings.HasPrefix(key, ck.BlockPrefix) {
		return badf("fsck-remove: key %q: not under %q", key, ck.BlockPrefix)
	}
	if _, err := h.store.Exists(ctx, key); err != nil {
		if errors.Is(err, blockmerge.ErrInvalidKey) {
			return badRequest{fmt.Errorf("fsck-remove: %w", err)}
		}
		return err
	}
	return nil
}
