package index

import (
	"fmt"
	"slices"
	"strings"

	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/internal/namekey"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/dups"
)

// Refusal says why a replacement was refused, for people: its String is
// "sources missing" (a source is not live: removed by retention, replaced
// by another completion, or never added), "invalid" (the job name, token,
// sources or outputs are malformed: an output fails validation, IDs
// repeat, an output lies outside the attempt's prefix, or there are no
// sources or no outputs) or "outputs not new" (an output ID is live,
// tombstoned, deleted less than the deduplication horizon ago, or under an
// orphaned prefix). The zero value, "applied", means the replacement was
// applied. Branch on [ReplaceResult.Applied] and its Missing sources.
type Refusal uint8

// The refusal reasons, in the order of their encoding in snapshots.
const (
	notRefused Refusal = iota
	refusedSourcesMissing
	refusedInvalid
	refusedOutputsNotNew
)

// refusalNames are the reasons' names, by value.
var refusalNames = [...]string{"applied", "sources missing", "invalid", "outputs not new"}

// String returns the reason's name.
func (r Refusal) String() string {
	if int(r) < len(refusalNames) {
		return refusalNames[r]
	}
	return fmt.Sprintf("Refusal(%d)", uint8(r))
}

// ReplaceResult is the outcome of [Index.Replace].
type ReplaceResult struct {
	// Applied reports that the sources left the index and the outputs
	// entered it.
	Applied bool
	// Missing lists the sources that were not live, and Surviving those
	// that were, in the given order and each once (a source repeated in
	// the request is listed at its first position), when the replacement
	// was refused, whatever the reason (both are empty when it was
	// applied). The state machine returns the surviving sources to the
	// planner.
	Missing, Surviving []string
	// Replayed reports that this (job, token) had already been replaced:
	// nothing changed and the result is the recorded one.
	Replayed bool
	// Reason says why the replacement was refused, and Detail explains it
	// naming the offending value.
	Reason Refusal
	Detail string
	// Orphan is the attempt prefix tombstoned because the replacement was
	// refused; empty if the replacement was applied, the job name or token
	// was invalid, or a live block lies under the prefix.
	Orphan string
}

func (r *result) toResult(replayed bool) ReplaceResult {
	out := ReplaceResult{
		Applied:   r.applied,
		Missing:   append([]string(nil), r.missing...),
		Surviving: append([]string(nil), r.surviving...),
		Replayed:  replayed,
		Reason:    r.reason,
		Detail:    r.detail,
	}
	if r.orphan {
		out.Orphan = ck.AttemptPrefix(r.job.String(), r.token)
	}
	return out
}

// Replace commits the completion of the attempt (job, token) at entry e and
// log time now: the sources leave the index and the outputs enter it. It is
// atomic and exactly-once:
//
//   - All sources live and the outputs valid and new → applied: the sources
//     leave the index and become block tombstones releasable at now plus the
//     cleanup delay — one record listing them after [Index.SetRecords], one
//     tombstone each before; the outputs become live.
//   - Otherwise → refused: no block enters or leaves the index. The result
//     lists the missing and surviving sources, and the attempt's output
//     prefix [compactkit.AttemptPrefix](job, token) becomes one orphan
//     tombstone, so whatever the attempt wrote is deleted. (No prefix is
//     tombstoned if a live block lies under it, which only happens if this
//     attempt was committed earlier and its result forgotten.)
//   - The same (job, token) again within [Config.CompletedRetention] → no
//     change; the recorded result with Replayed set.
//
// Outputs must be valid block metadata with distinct IDs under the
// attempt's prefix ([compactkit.OutputID] names them). Sources must be
// distinct and non-empty.
func (x *Index) Replace(e ck.Entry, now int64, job string, token fencing.Token, sources []string, outputs []ck.BlockMeta) ReplaceResult {
	now = x.advance(now)
	valid := ident.ValidateJobName(job) == nil && token != 0
	if valid {
		x.rprobe.job, x.rprobe.token = namekey.Of(job), token
		r, ok := x.s.results.Get(x.rprobe)
		*x.rprobe = result{}
		if ok && now < addSat(r.at, x.s.cfg.CompletedRetention) {
			return r.toResult(true)
		}
	}
	r := &result{job: namekey.Of(job), token: token, index: e.Index, at: now}
	srcs := slices.Grow(x.srcs[:0], len(sources))[:len(sources)]
	defer func() { clear(srcs); x.srcs = srcs[:0] }()
	for i, id := range sources {
		if it, l, at, ok := x.s.entryAt(id, x.pivot); ok && it.b != nil {
			srcs[i] = source{b: it.b, l: l, at: at}
		} else {
			r.missing = append(r.missing, id)
		}
	}

	switch {
	case !valid:
		r.reason, r.detail = refusedInvalid, fmt.Sprintf("job %q token %d: invalid attempt", job, token)
	case len(r.missing) > 0:
		r.reason, r.detail = refusedSourcesMissing, fmt.Sprintf("%d of %d sources not live, first %s", len(r.missing), len(sources), r.missing[0])
	default:
		r.reason, r.detail = x.checkReplacement(now, job, token, srcs, outputs)
	}
	if r.reason != notRefused {
		for i, id := range sources {
			if srcs[i].b != nil {
				r.surviving = append(r.surviving, id)
			}
		}
		r.missing, r.surviving = distinct(r.missing), distinct(r.surviving)
		x.s.refused++
		if !valid {
			return r.toResult(false)
		}
		prefix := ck.AttemptPrefix(job, token)
		if x.orphaned(prefix) {
			r.orphan = true
		} else if !x.s.liveUnder(prefix) {
			x.newTombs([]tkey{newKey(ck.TombstonePrefix, prefix)}, e.Index)
			r.orphan = true
		}
		x.record(r)
		return r.toResult(false)
	}
	if x.records {
		x.newRecord(srcs, e.Index)
	} else {
		var buf [32]tkey
		ks := buf[:0]
		for _, src := range srcs {
			x.remove(src.b)
			ks = append(ks, newKey(ck.TombstoneBlock, src.b.id))
		}
		x.newTombs(ks, e.Index)
	}
	for i := range outputs {
		x.insert(x.build(&outputs[i]))
	}
	r.applied = true
	x.s.applied++
	x.record(r)
	return r.toResult(false)
}

// distinct removes repeated strings from ss in place, keeping the first
// occurrence of each, in order.
func distinct(ss []string) []string {
	if len(ss) < 2 {
		return ss
	}
	seen := make(map[string]struct{}, len(ss))
	out := ss[:0]
	for _, s := range ss {
		if _, ok := seen[s]; !ok {
			seen[s] = struct{}{}
			out = append(out, s)
		}
	}
	return out
}

func (x *Index) record(r *result) {
	x.s.results.Mut(x.vmu).ReplaceOrInsert(r)
	x.resQ.push(r)
}

// checkReplacement validates the sources (all found live) and the
// outputs. It sorts srcs by ID, as newRecord needs them.
func (x *Index) checkReplacement(now int64, job string, token fencing.Token, srcs []source, outputs []ck.BlockMeta) (Refusal, string) {
	if len(srcs) == 0 {
		return refusedInvalid, "no sources"
	}
	if len(outputs) == 0 {
		return refusedInvalid, fmt.Sprintf("no outputs for %d sources: %v", len(srcs), ident.ErrMissingOutputs)
	}
	// A repeated source is the same block found twice: next to itself
	// once sorted.
	slices.SortFunc(srcs, cmpSource)
	for i := 1; i < len(srcs); i++ {
		if srcs[i].b == srcs[i-1].b {
			return refusedInvalid, "source " + srcs[i].b.id + " repeated"
		}
	}
	idPrefix := strings.TrimPrefix(ck.AttemptPrefix(job, token), ck.BlockPrefix)
	var seen dups.Tracker[string]
	for i := range outputs {
		o := &outputs[i]
		if err := o.Validate(); err != nil {
			return refusedInvalid, "output: " + err.Error()
		}
		if !strings.HasPrefix(o.ID, idPrefix) {
			return refusedInvalid, fmt.Sprintf("output %s outside the attempt prefix %s", o.ID, idPrefix)
		}
		if seen.Seen(o.ID) {
			return refusedInvalid, "output " + o.ID + " repeated"
		}
		if why := x.refusedID(o.ID, now); why != "" {
			return refusedOutputsNotNew, "output " + o.ID + ": " + why
		}
	}
	return notRefused, ""
}
