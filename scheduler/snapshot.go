package scheduler

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/codec"
)

// Versions of the scheduler's snapshot section. Version 2 adds the jobs'
// failure records and histories (see compactkit.JobState.LastFailure and
// History) in frames of their own after the completions. A scheduler
// writes version 2 only when some job has such a record — never before
// cluster version 3, which is when the
// state machine starts keeping them — so until then its bytes are those
// every earlier release writes and reads.
const (
	snapshotV1      byte = 1
	snapshotV2      byte = 2
	snapshotVersion      = snapshotV2
)

// componentName names the scheduler's section in its header frame.
const componentName = "scheduler"

// frameBytes bounds the string bytes of one job frame, well below the
// codec's frame limit.
const frameBytes = 32 << 20

// snapHeader is the first frame of a snapshot.
type snapHeader struct {
	_         struct{} `cbor:",toarray"`
	Component string
	Config    snapConfig
	LastEntry uint64
	Counters  []uint64
	Paused    []snapPause
	Jobs      uint64 // records in the job frames
	Completed uint64 // records in the completion frames
}

// snapHeaderV2 is snapHeader with the number of failure records.
type snapHeaderV2 struct {
	_         struct{} `cbor:",toarray"`
	Component string
	Config    snapConfig
	LastEntry uint64
	Counters  []uint64
	Paused    []snapPause
	Jobs      uint64
	Completed uint64
	Failed    uint64 // records in the failure frames
}

// failFrame holds up to codec.FrameRecords job records (version 2) in job
// name order: each job's failure record and history; histories flattened,
// each job's event count, then the events' columns.
type failFrame struct {
	_           struct{} `cbor:",toarray"`
	N           uint64
	Names       codec.Strings
	Reasons     codec.Strings
	At          []byte
	HistCounts  []byte
	HistAt      []byte
	HistKinds   []byte
	HistTokens  []byte
	HistWorkers codec.Strings
	HistDetails codec.Strings
}

// hasFailure reports whether j carries a record of version 2: a failure
// record or a history.
func hasFailure(j *job) bool {
	return j.st.LastFailure != "" || j.st.FailedAt != 0 || len(j.st.History) > 0
}

type snapConfig struct {
	_                  struct{} `cbor:",toarray"`
	MaxFailures        uint32
	LeaseDuration      int64
	MaxQueueSize       int64
	MaxSlotsPerRequest int64
	AgingThreshold     []int64
	CompletedRetention int64
}

type snapPause struct {
	_          struct{} `cbor:",toarray"`
	Tenant     string
	AllTenants bool
	Level      uint32
	AllLevels  bool
}

// jobFrame holds up to codec.FrameRecords jobs in name order, one column
// per field. Plans are flattened: each job's source and tombstone counts,
// then all sources and all tombstones.
type jobFrame struct {
	_            struct{} `cbor:",toarray"`
	N            uint64
	Names        codec.Strings
	Tenants      codec.Strings
	Workers      codec.Strings
	Shards       []byte
	Levels       []byte
	Statuses     []byte
	Failures     []byte
	Tokens       []byte
	Versions     []byte
	Deadlines    []byte
	AddedAt      []byte
	SourceCounts []byte
	Sources      codec.Strings
	TombCounts   []byte
	TombKinds    []byte
	TombTargets  codec.Strings
}

// doneFrame holds up to codec.FrameRecords remembered completions in name
// order.
type doneFrame struct {
	_      struct{} `cbor:",toarray"`
	N      uint64
	Names  codec.Strings
	Tokens []byte
	At     []byte
}

// Snapshot writes the scheduler's state to w as one framed, checksummed
// stream (see CONTRIBUTING.md): a header with the configuration, counters
// and pauses, then the jobs in name order and the remembered completions in
// name order, in columnar frames. The bytes are a function of the logical
// state only.
func (s *Scheduler) Snapshot(w io.Writer) error {
	var failed []*job
	s.byName.Ascend(func(j *job) bool {
		if hasFailure(j) {
			failed = append(failed, j)
		}
		return true
	})
	version := snapshotV1
	if len(failed) > 0 {
		version = snapshotV2
	}
	sw, err := codec.NewWriter(w, codec.Snapshot, codec.KindSection, version)
	if err != nil {
		return fmt.Errorf("scheduler snapshot: %w", err)
	}
	h := snapHeader{
		Component: componentName,
		Config:    configRecord(s.cfg),
		LastEntry: s.lastEntry,
		Counters:  s.counters.list(),
		Jobs:      uint64(s.byName.Len()),
		Completed: uint64(s.completed.Len()),
	}
	for _, r := range s.pauses.rules {
		h.Paused = append(h.Paused, snapPause{Tenant: r.Tenant, AllTenants: r.AllTenants, Level: r.Level, AllLevels: r.AllLevels})
	}
	var hv any = &h
	if version == snapshotV2 {
		hv = &snapHeaderV2{Component: h.Component, Config: h.Config, LastEntry: h.LastEntry, Counters: h.Counters,
			Paused: h.Paused, Jobs: h.Jobs, Completed: h.Completed, Failed: uint64(len(failed))}
	}
	if err := sw.Encode(hv); err != nil {
		return fmt.Errorf("scheduler snapshot: header: %w", err)
	}
	var (
		batch []*job
		bytes int
		werr  error
	)
	flush := func() {
		if len(batch) > 0 && werr == nil {
			werr = sw.Encode(packJobs(batch))
		}
		batch, bytes = batch[:0], 0
	}
	s.byName.Ascend(func(j *job) bool {
		batch = append(batch, j)
		bytes += jobBytes(j)
		if len(batch) == codec.FrameRecords || bytes >= frameBytes {
			flush()
		}
		return werr == nil
	})
	flush()
	var dones []*done
	s.completed.Ascend(func(d *done) bool {
		dones = append(dones, d)
		if len(dones) == codec.FrameRecords {
			werr = errors.Join(werr, sw.Encode(packDone(dones)))
			dones = dones[:0]
		}
		return werr == nil
	})
	if len(dones) > 0 && werr == nil {
		werr = sw.Encode(packDone(dones))
	}
	for len(failed) > 0 && werr == nil {
		n := min(len(failed), codec.FrameRecords)
		werr = sw.Encode(packFailures(failed[:n]))
		failed = failed[n:]
	}
	if werr != nil {
		return fmt.Errorf("scheduler snapshot: %w", werr)
	}
	if err := sw.Close(); err != nil {
		return fmt.Errorf("scheduler snapshot: %w", err)
	}
	return nil
}

func configRecord(c Config) snapConfig {
	r := snapConfig{
		MaxFailures:        c.MaxFailures,
		LeaseDuration:      int64(c.LeaseDuration),
		MaxQueueSize:       int64(c.MaxQueueSize),
		MaxSlotsPerRequest: int64(c.MaxSlotsPerRequest),
		CompletedRetention: int64(c.CompletedRetention),
	}
	for _, d := range c.AgingThreshold {
		r.AgingThreshold = append(r.AgingThreshold, int64(d))
	}
	return r
}

func (r *snapConfig) config() (Config, error) {
	const maxInt = int64(^uint(0) >> 1)
	if r.MaxQueueSize > maxInt || r.MaxSlotsPerRequest > maxInt {
		return Config{}, fmt.Errorf("queue size %d, slots %d: %w", r.MaxQueueSize, r.MaxSlotsPerRequest, ErrInvalidConfig)
	}
	c := Config{
		MaxFailures:        r.MaxFailures,
		LeaseDuration:      time.Duration(r.LeaseDuration),
		MaxQueueSize:       int(r.MaxQueueSize),
		MaxSlotsPerRequest: int(r.MaxSlotsPerRequest),
		CompletedRetention: time.Duration(r.CompletedRetention),
	}
	for _, d := range r.AgingThreshold {
		c.AgingThreshold = append(c.AgingThreshold, time.Duration(d))
	}
	return c, c.Validate()
}

func jobBytes(j *job) int {
	n := 64 + len(j.st.Name) + len(j.st.Tenant) + len(j.st.Worker)
	for _, id := range j.plan.Sources {
		n += len(id) + 2
	}
	for _, t := range j.plan.Tombstones {
		n += len(t.Target) + 3
	}
	return n
}

func packJobs(js []*job) *jobFrame {
	n := len(js)
	var (
		names, tenants, workers, sources, targets = make([]string, n), make([]string, n), make([]string, n), []string(nil), []string(nil)
		shards, levels, statuses, failures        = make([]uint32, n), make([]uint32, n), make([]uint8, n), make([]uint32, n)
		tokens, versions                          = make([]uint64, n), make([]uint64, n)
		deadlines, added                          = make([]int64, n), make([]int64, n)
		srcCounts, tombCounts                     = make([]int, n), make([]int, n)
		kinds                                     []uint8
	)
	for i, j := range js {
		names[i], tenants[i], workers[i] = j.st.Name, j.st.Tenant, j.st.Worker
		shards[i], levels[i], statuses[i], failures[i] = j.plan.Shard, j.st.Level, uint8(j.st.Status), j.st.Failures
		tokens[i], versions[i] = uint64(j.st.Token), j.st.Version
		deadlines[i], added[i] = j.st.Deadline, j.st.AddedAt
		srcCounts[i], tombCounts[i] = len(j.plan.Sources), len(j.plan.Tombstones)
		sources = append(sources, j.plan.Sources...)
		for _, t := range j.plan.Tombstones {
			kinds = append(kinds, uint8(t.Kind))
			targets = append(targets, t.Target)
		}
	}
	return &jobFrame{
		N:            uint64(n),
		Names:        codec.PackStrings(names),
		Tenants:      codec.PackStrings(tenants),
		Workers:      codec.PackStrings(workers),
		Shards:       codec.PackInts(shards),
		Levels:       codec.PackInts(levels),
		Statuses:     codec.PackInts(statuses),
		Failures:     codec.PackInts(failures),
		Tokens:       codec.PackInts(tokens),
		Versions:     codec.PackInts(versions),
		Deadlines:    codec.PackInts(deadlines),
		AddedAt:      codec.PackInts(added),
		SourceCounts: codec.PackInts(srcCounts),
		Sources:      codec.PackStrings(sources),
		TombCounts:   codec.PackInts(tombCounts),
		TombKinds:    codec.PackInts(kinds),
		TombTargets:  codec.PackStrings(targets),
	}
}

func packFailures(js []*job) *failFrame {
	n := len(js)
	names, reasons, at, counts := make([]string, n), make([]string, n), make([]int64, n), make([]int, n)
	var (
		hAt, hTokens    []int64
		hKinds          []uint8
		hWorkers, hDets []string
	)
	for i, j := range js {
		names[i], reasons[i], at[i], counts[i] = j.st.Name, j.st.LastFailure, j.st.FailedAt, len(j.st.History)
		for _, ev := range j.st.History {
			hAt, hKinds, hTokens = append(hAt, ev.At), append(hKinds, uint8(ev.Kind)), append(hTokens, int64(ev.Token))
			hWorkers, hDets = append(hWorkers, ev.Worker), append(hDets, ev.Detail)
		}
	}
	return &failFrame{
		N: uint64(n), Names: codec.PackStrings(names), Reasons: codec.PackStrings(reasons), At: codec.PackInts(at),
		HistCounts: codec.PackInts(counts), HistAt: codec.PackInts(hAt), HistKinds: codec.PackInts(hKinds),
		HistTokens: codec.PackInts(hTokens), HistWorkers: codec.PackStrings(hWorkers), HistDetails: codec.PackStrings(hDets),
	}
}

// unpackFailures calls fn with every record of f.
func unpackFailures(f *failFrame, fn func(name, reason string, at int64, hist []ck.JobEvent) error) error {
	n := int(f.N)
	names, err := f.Names.Unpack(n)
	if err != nil {
		return fmt.Errorf("scheduler restore: record names: %w", err)
	}
	reasons, err := f.Reasons.Unpack(n)
	if err != nil {
		return fmt.Errorf("scheduler restore: failure reasons: %w", err)
	}
	at, e1 := codec.UnpackInts[int64](f.At, n)
	counts, e2 := codec.UnpackInts[uint8](f.HistCounts, n)
	if err := errors.Join(e1, e2); err != nil {
		return fmt.Errorf("scheduler restore: record columns: %w", err)
	}
	total := 0
	for _, c := range counts {
		if int(c) > ck.MaxJobHistory {
			return malformedf("a history of %d events", c)
		}
		total += int(c)
	}
	hAt, e1 := codec.UnpackInts[int64](f.HistAt, total)
	hKinds, e2 := codec.UnpackInts[uint8](f.HistKinds, total)
	hTokens, e3 := codec.UnpackInts[uint64](f.HistTokens, total)
	if err := errors.Join(e1, e2, e3); err != nil {
		return fmt.Errorf("scheduler restore: history columns: %w", err)
	}
	hWorkers, err := f.HistWorkers.Unpack(total)
	if err != nil {
		return fmt.Errorf("scheduler restore: history workers: %w", err)
	}
	hDets, err := f.HistDetails.Unpack(total)
	if err != nil {
		return fmt.Errorf("scheduler restore: history details: %w", err)
	}
	k := 0
	for i := range n {
		var hist []ck.JobEvent
		if c := int(counts[i]); c > 0 {
			hist = make([]ck.JobEvent, c)
			for e := range c {
				hist[e] = ck.JobEvent{At: hAt[k], Kind: ck.JobEventKind(hKinds[k]), Token: fencing.Token(hTokens[k]), Worker: hWorkers[k], Detail: hDets[k]}
				k++
			}
		}
		if err := fn(names[i], reasons[i], at[i], hist); err != nil {
			return err
		}
	}
	return nil
}

func packDone(ds []*done) *doneFrame {
	names, tokens, at := make([]string, len(ds)), make([]uint64, len(ds)), make([]int64, len(ds))
	for i, d := range ds {
		names[i], tokens[i], at[i] = d.name, uint64(d.token), d.at
	}
	return &doneFrame{N: uint64(len(ds)), Names: codec.PackStrings(names), Tokens: codec.PackInts(tokens), At: codec.PackInts(at)}
}

// malformed wraps a validation error of a snapshot so that it matches both
// compactkit.ErrMalformed and the validation sentinel.
func malformed(where string, err error) error {
	return fmt.Errorf("scheduler restore: %s: %w: %w", where, ck.ErrMalformed, err)
}

func malformedf(format string, args ...any) error {
	return fmt.Errorf("scheduler restore: %s: %w", fmt.Sprintf(format, args...), ck.ErrMalformed)
}

// Restore reads one snapshot stream written by [Scheduler.Snapshot] and
// returns the scheduler it describes. It reads exactly the stream, up to and
// including its checksum, and nothing after it, so several sections can be
// read from one reader (fastest from one that implements io.ByteReader,
// such as a *bufio.Reader). Everything read is validated; a malformed, truncated or
// unknown snapshot returns an error wrapping compactkit.ErrMalformed,
// ErrTruncated, ErrUnknownVersion, ErrTooLarge or ErrChecksum, and builds
// nothing.
func Restore(r io.Reader) (*Scheduler, error) {
	sr, err := codec.NewReader(r, codec.Snapshot, codec.KindSection)
	if err != nil {
		return nil, fmt.Errorf("scheduler restore: %w", err)
	}
	var (
		h      snapHeader
		failed uint64
	)
	switch v := sr.Version(); v {
	case snapshotV1:
		if err := sr.Decode(&h); err != nil {
			return nil, fmt.Errorf("scheduler restore: header: %w", noEOF(err))
		}
	case snapshotV2:
		var h2 snapHeaderV2
		if err := sr.Decode(&h2); err != nil {
			return nil, fmt.Errorf("scheduler restore: header: %w", noEOF(err))
		}
		if h2.Failed == 0 || h2.Failed > h2.Jobs {
			return nil, malformedf("%d failure records for %d jobs", h2.Failed, h2.Jobs)
		}
		h = snapHeader{Component: h2.Component, Config: h2.Config, LastEntry: h2.LastEntry, Counters: h2.Counters,
			Paused: h2.Paused, Jobs: h2.Jobs, Completed: h2.Completed}
		failed = h2.Failed
	default:
		return nil, fmt.Errorf("scheduler restore: section version %d, this release reads %d to %d: %w", v, snapshotV1, snapshotVersion, ck.ErrUnknownVersion)
	}
	if h.Component != componentName {
		return nil, malformedf("section of %q", h.Component)
	}
	cfg, err := h.Config.config()
	if err != nil {
		return nil, malformed("config", err)
	}
	if len(h.Counters) != numCounters {
		return nil, malformedf("%d counters, want %d", len(h.Counters), numCounters)
	}
	s := newScheduler(cfg)
	s.lastEntry = h.LastEntry
	s.counters = countersFrom(h.Counters)
	rules := make([]PauseRule, 0, len(h.Paused))
	for i, p := range h.Paused {
		r := PauseRule{Tenant: p.Tenant, AllTenants: p.AllTenants, Level: p.Level, AllLevels: p.AllLevels}
		if (r.AllTenants && r.Tenant != "") || (!r.AllTenants && r.Tenant == "") || (r.AllLevels && r.Level != 0) || !validTenant(r.Tenant) {
			return nil, malformedf("pause rule %d: %+v", i, r)
		}
		if i > 0 && comparePauseRules(rules[i-1], r) >= 0 {
			return nil, malformedf("pause rule %d out of order", i)
		}
		rules = append(rules, r)
	}
	s.pauses = newPauses(rules)

	prev := ""
	for read := uint64(0); read < h.Jobs; {
		var f jobFrame
		if err := sr.Decode(&f); err != nil {
			return nil, fmt.Errorf("scheduler restore: jobs: %w", noEOF(err))
		}
		if f.N == 0 || f.N > codec.FrameRecords || f.N > h.Jobs-read {
			return nil, malformedf("job frame of %d records, %d of %d read", f.N, read, h.Jobs)
		}
		js, err := unpackJobs(&f)
		if err != nil {
			return nil, err
		}
		for _, j := range js {
			if read > 0 && j.st.Name <= prev {
				return nil, malformedf("job %q after %q", j.st.Name, prev)
			}
			prev = j.st.Name
			j.active = !s.pauses.paused(j.st.Tenant, j.st.Level)
			s.insert(j)
			read++
		}
	}
	prev = ""
	for read := uint64(0); read < h.Completed; {
		var f doneFrame
		if err := sr.Decode(&f); err != nil {
			return nil, fmt.Errorf("scheduler restore: completions: %w", noEOF(err))
		}
		if f.N == 0 || f.N > codec.FrameRecords || f.N > h.Completed-read {
			return nil, malformedf("completion frame of %d records, %d of %d read", f.N, read, h.Completed)
		}
		ds, err := unpackDone(&f)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if read > 0 && d.name <= prev {
				return nil, malformedf("completion %q after %q", d.name, prev)
			}
			if s.get(d.name) != nil {
				return nil, malformedf("completed job %q is also queued", d.name)
			}
			prev = d.name
			s.remember(d)
			read++
		}
	}
	prev = ""
	for read := uint64(0); read < failed; {
		var f failFrame
		if err := sr.Decode(&f); err != nil {
			return nil, fmt.Errorf("scheduler restore: failure records: %w", noEOF(err))
		}
		if f.N == 0 || f.N > codec.FrameRecords || f.N > failed-read {
			return nil, malformedf("failure frame of %d records, %d of %d read", f.N, read, failed)
		}
		if err := unpackFailures(&f, func(name, reason string, at int64, hist []ck.JobEvent) error {
			if read > 0 && name <= prev {
				return malformedf("failure record %q after %q", name, prev)
			}
			prev = name
			j := s.get(name)
			if j == nil {
				return malformedf("failure record of unknown job %q", name)
			}
			// Restore still owns every record: no view can see it.
			j.st.LastFailure, j.st.FailedAt, j.st.History = reason, at, hist
			if !hasFailure(j) || j.st.Validate() != nil {
				return malformedf("failure record of job %q: %q at %d", name, reason, at)
			}
			read++
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if err := sr.Finish(); err != nil {
		return nil, fmt.Errorf("scheduler restore: %w", err)
	}
	s.dirty()
	return s, nil
}

// noEOF turns a premature end of stream into ErrTruncated.
func noEOF(err error) error {
	if err == io.EOF {
		return fmt.Errorf("stream ends early: %w", ck.ErrTruncated)
	}
	return err
}

func unpackJobs(f *jobFrame) ([]*job, error) {
	n := int(f.N)
	names, err := f.Names.Unpack(n)
	if err != nil {
		return nil, fmt.Errorf("scheduler restore: names: %w", err)
	}
	tenants, err := f.Tenants.Unpack(n)
	if err != nil {
		return nil, fmt.Errorf("scheduler restore: tenants: %w", err)
	}
	workers, err := f.Workers.Unpack(n)
	if err != nil {
		return nil, fmt.Errorf("scheduler restore: workers: %w", err)
	}
	shards, e1 := codec.UnpackInts[uint32](f.Shards, n)
	levels, e2 := codec.UnpackInts[uint32](f.Levels, n)
	statuses, e3 := codec.UnpackInts[uint8](f.Statuses, n)
	failures, e4 := codec.UnpackInts[uint32](f.Failures, n)
	tokens, e5 := codec.UnpackInts[uint64](f.Tokens, n)
	versions, e6 := codec.UnpackInts[uint64](f.Versions, n)
	deadlines, e7 := codec.UnpackInts[int64](f.Deadlines, n)
	added, e8 := codec.UnpackInts[int64](f.AddedAt, n)
	srcCounts, e9 := codec.UnpackInts[uint32](f.SourceCounts, n)
	tombCounts, e10 := codec.UnpackInts[uint32](f.TombCounts, n)
	if err := errors.Join(e1, e2, e3, e4, e5, e6, e7, e8, e9, e10); err != nil {
		return nil, fmt.Errorf("scheduler restore: job columns: %w", err)
	}
	nsrc, ntomb := 0, 0
	for i := range n {
		nsrc += int(srcCounts[i])
		ntomb += int(tombCounts[i])
	}
	sources, err := f.Sources.Unpack(nsrc)
	if err != nil {
		return nil, fmt.Errorf("scheduler restore: sources: %w", err)
	}
	targets, err := f.TombTargets.Unpack(ntomb)
	if err != nil {
		return nil, fmt.Errorf("scheduler restore: tombstones: %w", err)
	}
	kinds, err := codec.UnpackInts[uint8](f.TombKinds, ntomb)
	if err != nil {
		return nil, fmt.Errorf("scheduler restore: tombstone kinds: %w", err)
	}
	out := make([]*job, n)
	recs := make([]job, n)
	plans := make([]ck.JobPlan, n)
	for i := range n {
		p := &plans[i]
		p.Name, p.Tenant, p.Shard, p.Level = names[i], tenants[i], shards[i], levels[i]
		if c := int(srcCounts[i]); c > 0 {
			p.Sources, sources = sources[:c:c], sources[c:]
		}
		if c := int(tombCounts[i]); c > 0 {
			p.Tombstones = make([]ck.Tombstone, c)
			for k := range c {
				p.Tombstones[k] = ck.Tombstone{Kind: ck.TombstoneKind(kinds[k]), Target: targets[k]}
			}
			kinds, targets = kinds[c:], targets[c:]
		}
		j := &recs[i]
		j.plan = p
		j.st = ck.JobState{
			Name: names[i], Tenant: tenants[i], Level: levels[i], Status: ck.JobStatus(statuses[i]),
			Token: fencing.Token(tokens[i]), Version: versions[i], Deadline: deadlines[i], AddedAt: added[i],
			Failures: failures[i], Worker: workers[i],
		}
		if err := validateJob(j); err != nil {
			return nil, err
		}
		out[i] = j
	}
	return out, nil
}

func validateJob(j *job) error {
	if err := j.plan.Validate(); err != nil {
		return malformed("job "+j.st.Name, err)
	}
	if err := j.st.Validate(); err != nil {
		return malformed("job "+j.st.Name, err)
	}
	switch {
	case j.st.Token == 0 || j.st.Version == 0:
		return malformedf("job %q: token %d, version %d", j.st.Name, j.st.Token, j.st.Version)
	case j.st.Status == ck.StatusInProgress && j.st.Worker == "":
		return malformedf("job %q in progress without a worker", j.st.Name)
	}
	return nil
}

func unpackDone(f *doneFrame) ([]*done, error) {
	n := int(f.N)
	names, err := f.Names.Unpack(n)
	if err != nil {
		return nil, fmt.Errorf("scheduler restore: completion names: %w", err)
	}
	tokens, e1 := codec.UnpackInts[uint64](f.Tokens, n)
	at, e2 := codec.UnpackInts[int64](f.At, n)
	if err := errors.Join(e1, e2); err != nil {
		return nil, fmt.Errorf("scheduler restore: completion columns: %w", err)
	}
	recs := make([]done, n)
	out := make([]*done, n)
	for i := range n {
		if err := ck.ValidateJobName(names[i]); err != nil {
			return nil, malformed("completion", err)
		}
		if tokens[i] == 0 {
			return nil, malformedf("completion %q with token 0", names[i])
		}
		recs[i] = done{name: names[i], token: fencing.Token(tokens[i]), at: at[i]}
		out[i] = &recs[i]
	}
	return slices.Clip(out), nil
}
