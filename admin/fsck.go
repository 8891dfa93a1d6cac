package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/raftfsm"
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
func (h *Handler) check(ctx context.Context) (*FsckReport, *accounted, error) {
	if h.store == nil {
		return nil, nil, notFound{fmt.Errorf("fsck: this handler has no object store (see admin.WithStore)")}
	}
	if _, err := h.svc.Stats(ctx); err != nil { // on the leader, up to date
		return nil, nil, err
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
		jobs, next := f.Jobs(raftfsm.JobFilter{Status: ck.StatusInProgress}, cursor, scheduler.MaxListLimit)
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
		return nil, nil, err
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
	return rep, acc, nil
}

func (h *Handler) fsck(r *http.Request) (any, error) {
	rep, _, err := h.check(r.Context())
	return rep, err
}

// RemoveRequest names the orphans to remove.
type RemoveRequest struct {
	Keys []string `json:"keys"`
}

// RemoveResult says what was removed, and what was not because it is no
// longer an orphan (or never was).
type RemoveResult struct {
	Removed []string `json:"removed"`
	Kept    []string `json:"kept"`
}

// fsckRemove removes the given objects that a fresh check still finds
// orphaned; it never removes anything it was not asked to.
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
	_, acc, err := h.check(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	res := RemoveResult{Removed: []string{}, Kept: []string{}}
	for _, k := range req.Keys {
		if err := blockmerge.ValidateKey(k); err != nil || !strings.HasPrefix(k, ck.BlockPrefix) || acc.covers(k) {
			res.Kept = append(res.Kept, k)
			continue
		}
		if err := h.store.Delete(r.Context(), k); err != nil {
			fail(w, err)
			return
		}
		res.Removed = append(res.Removed, k)
	}
	h.log.Info("admin: orphans removed", "removed", len(res.Removed), "kept", len(res.Kept), "from", r.RemoteAddr)
	writeJSON(w, res)
}
