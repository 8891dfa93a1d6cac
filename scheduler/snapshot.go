package scheduler

import (
	"errors"
	"fmt"
	"io"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/ident"
)

// Versions of the scheduler's snapshot section. Version 2 adds the jobs'
// failure records and histories (see compactkit.JobState.LastFailure and
// History) in frames of their own after the completions. A scheduler
// writes version 2 only when some job has such a record: a state without
// one is written in version 1.
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

// snapHeader is the first frame of a snapshot: an array of seven items in
// version 1, of eight in version 2, which adds the number of failure
// records (and is written only with some).
type snapHeader struct {
	Component string
	Config    snapConfig
	LastEntry uint64
	Counters  []uint64
	Paused    []snapPause
	Jobs      uint64 // records in the job frames
	Completed uint64 // records in the completion frames
	Failed    uint64 // records in the failure frames (version 2)
}

// MarshalCBOR encodes the header as seven items, or eight with failure
// records: in the compact form, so that the number of items follows the
// section's version (version 2 is written only with failure records).
func (h snapHeader) MarshalCBOR() ([]byte, error) {
	return codec.Snapshot.Compact().MarshalItems(7, h.items()...)
}

// UnmarshalCBOR decodes [snapHeader.MarshalCBOR]'s encoding; eight items
// with no failure record are malformed.
func (h *snapHeader) UnmarshalCBOR(data []byte) error {
	return codec.Snapshot.Compact().UnmarshalItems(data, 7, h.items()...)
}

// items lists the header's encoded fields, in order.
func (h *snapHeader) items() []any {
	return []any{&h.Component, &h.Config, &h.LastEntry, &h.Counters, &h.Paused, &h.Jobs, &h.Completed, &h.Failed}
}

// failFrame holds up to codec.FrameRecords job records (version 2) in job
// name order: each job's failure record and history; histories flattened,
// each job's event count, then the events' columns.
type failFrame struct {
	_           struct{} `cbor:",toarray"`
	N           int
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
	N            int
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
	N      int
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
	s.settle()
	var failed []*job
	s.byName.Ascend(func(r named) bool {
		j := r.j
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
		Failed:    uint64(len(failed)),
	}
	for _, r := range s.pauses.rules {
		h.Paused = append(h.Paused, snapPause{Tenant: r.Tenant, AllTenants: r.AllTenants, Level: r.Level, AllLevels: r.AllLevels})
	}
	if err := sw.Encode(&h); err != nil {
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
	s.byName.Ascend(func(r named) bool {
		j := r.j
		batch = append(batch, j)
		bytes += jobBytes(j)
		if len(batch) == codec.FrameRecords || bytes >= frameBytes {
			flush()
		}
		return werr == nil
	})
	flush()
	var dones []*done
	s.completed.Ascend(func(r doneRef) bool {
		d := r.d
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
		N:            n,
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
		N: n, Names: codec.PackStrings(names), Reasons: codec.PackStrings(reasons), At: codec.PackInts(at),
		HistCounts: codec.PackInts(counts), HistAt: codec.PackInts(hAt), HistKinds: codec.PackInts(hKinds),
		HistTokens: codec.PackInts(hTokens), HistWorkers: codec.PackStrings(hWorkers), HistDetails: codec.PackStrings(hDets),
	}
}

func packDone(ds []*done) *doneFrame {
	names, tokens, at := make([]string, len(ds)), make([]uint64, len(ds)), make([]int64, len(ds))
	for i, d := range ds {
		names[i], tokens[i], at[i] = d.name, uint64(d.token), d.at
	}
	return &doneFrame{N: len(ds), Names: codec.PackStrings(names), Tokens: codec.PackInts(tokens), At: codec.PackInts(at)}
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
	return codec.RestoreSection(r, "scheduler restore", restore)
}

// restore reads the stream, one restorer method per section.
func restore(d *codec.Decoder, version byte) (*Scheduler, error) {
	rs := &restorer{d: d, version: version}
	if err := d.Run(rs.header, rs.jobs, rs.completions, rs.failures); err != nil {
		return nil, err
	}
	return rs.s, nil
}

// restorer rebuilds a scheduler from a snapshot.
type restorer struct {
	d       *codec.Decoder
	version byte
	h       snapHeader
	s       *Scheduler
}

func (rs *restorer) header() error {
	h, v := &rs.h, rs.version
	if v != snapshotV1 && v != snapshotV2 {
		return fmt.Errorf("section version %d, this release reads %d to %d: %w", v, snapshotV1, snapshotVersion, ck.ErrUnknownVersion)
	}
	if err := codec.Header(rs.d, h, &h.Component, componentName); err != nil {
		return err
	}
	switch {
	case v == snapshotV1 && h.Failed != 0:
		return codec.Malformed("version %d with %d failure records", v, h.Failed)
	case v == snapshotV2 && (h.Failed == 0 || h.Failed > h.Jobs):
		return codec.Malformed("%d failure records for %d jobs", h.Failed, h.Jobs)
	}
	cfg, err := h.Config.config()
	if err != nil {
		return codec.Malformed("config: %w", err)
	}
	if len(h.Counters) != numCounters {
		return codec.Malformed("%d counters, want %d", len(h.Counters), numCounters)
	}
	s := newScheduler(cfg)
	s.lastEntry = h.LastEntry
	s.counters = countersFrom(h.Counters)
	rules := make([]PauseRule, 0, len(h.Paused))
	for i, p := range h.Paused {
		r := PauseRule{Tenant: p.Tenant, AllTenants: p.AllTenants, Level: p.Level, AllLevels: p.AllLevels}
		if (r.AllTenants && r.Tenant != "") || (r.AllLevels && r.Level != 0) || ident.ValidateTenant(r.Tenant) != nil {
			return codec.Malformed("pause rule %d: %+v", i, r)
		}
		if i > 0 && comparePauseRules(rules[i-1], r) >= 0 {
			return codec.Malformed("pause rule %d out of order", i)
		}
		rules = append(rules, r)
	}
	s.pauses = newPauses(rules)
	rs.s = s
	return nil
}

// jobs reads the jobs, in name order, with their plans.
func (rs *restorer) jobs() error {
	d, s := rs.d, rs.s
	var f jobFrame
	return inNameOrder(d, "jobs", "job", rs.h.Jobs, &f, &f.N, &f.Names, func(names []string, n int) error {
		tenants := d.Strings("tenants", f.Tenants, n)
		workers := d.Strings("workers", f.Workers, n)
		shards := codec.Ints[uint32](d, "shards", f.Shards, n)
		levels := codec.Ints[uint32](d, "levels", f.Levels, n)
		statuses := codec.Ints[uint8](d, "statuses", f.Statuses, n)
		failures := codec.Ints[uint32](d, "failures", f.Failures, n)
		tokens := codec.Ints[uint64](d, "tokens", f.Tokens, n)
		versions := codec.Ints[uint64](d, "versions", f.Versions, n)
		deadlines := codec.Ints[int64](d, "deadlines", f.Deadlines, n)
		added := codec.Ints[int64](d, "added times", f.AddedAt, n)
		srcCounts := codec.Ints[uint32](d, "source counts", f.SourceCounts, n)
		tombCounts := codec.Ints[uint32](d, "tombstone counts", f.TombCounts, n)
		sources := d.Strings("sources", f.Sources, codec.Total(d, "source counts", srcCounts))
		ntomb := codec.Total(d, "tombstone counts", tombCounts)
		targets := d.Strings("tombstones", f.TombTargets, ntomb)
		kinds := codec.Ints[uint8](d, "tombstone kinds", f.TombKinds, ntomb)
		if err := d.Err(); err != nil {
			return err
		}
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
				return err
			}
		}
		for i := range recs {
			j := &recs[i]
			s.shape(j, s.policy(j.st.Tenant), s.counts[j.st.Tenant]) // the default policy: the state machine sets the rest
			s.insert(j)
		}
		return nil
	})
}

// inNameOrder reads a run of n records in name order, frames of type F
// (see codec.Frames): it unpacks each frame's names (the column names
// points at), checks that they follow the run's previous ones, and hands
// them to body. record names a record in errors.
func inNameOrder[F any](d *codec.Decoder, what, record string, n uint64, f *F, count *int, names *codec.Strings, body func(names []string, n int) error) error {
	prev := ""
	return codec.Frames(d, what, n, f, count, func(n int) error {
		ns := d.Strings("names", *names, n)
		for _, name := range ns {
			if prev != "" && name <= prev {
				return codec.Malformed("%s %q after %q", record, name, prev)
			}
			prev = name
		}
		return body(ns, n)
	})
}

func validateJob(j *job) error {
	if err := j.plan.Validate(); err != nil {
		return codec.Malformed("job %s: %w", j.st.Name, err)
	}
	if err := j.st.Validate(); err != nil {
		return codec.Malformed("job %s: %w", j.st.Name, err)
	}
	switch {
	case j.st.Token == 0 || j.st.Version == 0:
		return codec.Malformed("job %q: token %d, version %d", j.st.Name, j.st.Token, j.st.Version)
	case j.st.Status == ck.StatusInProgress && j.st.Worker == "":
		return codec.Malformed("job %q in progress without a worker", j.st.Name)
	}
	return nil
}

// completions reads the remembered completions, in name order.
func (rs *restorer) completions() error {
	d, s := rs.d, rs.s
	var f doneFrame
	return inNameOrder(d, "completions", "completion", rs.h.Completed, &f, &f.N, &f.Names, func(names []string, n int) error {
		tokens := codec.Ints[uint64](d, "tokens", f.Tokens, n)
		at := codec.Ints[int64](d, "times", f.At, n)
		if err := d.Err(); err != nil {
			return err
		}
		recs := make([]done, n)
		for i := range n {
			if err := ident.ValidateJobName(names[i]); err != nil {
				return codec.Malformed("completion: %w", err)
			}
			if tokens[i] == 0 {
				return codec.Malformed("completion %q with token 0", names[i])
			}
			recs[i] = done{name: names[i], token: fencing.Token(tokens[i]), at: at[i]}
		}
		for i := range recs {
			r := &recs[i]
			if s.get(r.name) != nil {
				return codec.Malformed("completed job %q is also queued", r.name)
			}
			s.remember(r)
		}
		return nil
	})
}

// failures reads the jobs' failure records and histories (version 2), in
// name order.
func (rs *restorer) failures() error {
	d, s := rs.d, rs.s
	var f failFrame
	return inNameOrder(d, "failure records", "failure record", rs.h.Failed, &f, &f.N, &f.Names, func(names []string, n int) error {
		reasons := d.Strings("reasons", f.Reasons, n)
		at := codec.Ints[int64](d, "times", f.At, n)
		counts := codec.Ints[uint8](d, "history counts", f.HistCounts, n)
		if err := d.Err(); err != nil {
			return err
		}
		for _, c := range counts {
			if int(c) > ident.MaxJobHistory {
				return codec.Malformed("a history of %d events", c)
			}
		}
		total := codec.Total(d, "history counts", counts)
		hAt := codec.Ints[int64](d, "history times", f.HistAt, total)
		hKinds := codec.Ints[uint8](d, "history kinds", f.HistKinds, total)
		hTokens := codec.Ints[uint64](d, "history tokens", f.HistTokens, total)
		hWorkers := d.Strings("history workers", f.HistWorkers, total)
		hDets := d.Strings("history details", f.HistDetails, total)
		if err := d.Err(); err != nil {
			return err
		}
		k := 0
		for i, name := range names {
			var hist []ck.JobEvent
			if c := int(counts[i]); c > 0 {
				hist = make([]ck.JobEvent, c)
				for e := range c {
					hist[e] = ck.JobEvent{At: hAt[k], Kind: ck.JobEventKind(hKinds[k]), Token: fencing.Token(hTokens[k]), Worker: hWorkers[k], Detail: hDets[k]}
					k++
				}
			}
			j := s.get(name)
			if j == nil {
				return codec.Malformed("failure record of unknown job %q", name)
			}
			// Restore still owns every record: no view can see it.
			j.st.LastFailure, j.st.FailedAt, j.st.History = reasons[i], at[i], hist
			if !hasFailure(j) || j.st.Validate() != nil {
				return codec.Malformed("failure record of job %q: %q at %d", name, reasons[i], at[i])
			}
		}
		return nil
	})
}
