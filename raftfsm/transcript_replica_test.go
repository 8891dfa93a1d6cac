package raftfsm_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// The transcript commands about more than one replica, and about entries
// no honest leader writes: replica, compare, raw, forge.

// replica is a second state machine that applies the transcript's log.
type replica struct {
	name    string
	f       *raftfsm.FSM
	applied int // the entries of the log it has applied (or restored)
	// entryTime is "" (the log's entry time), "none" (0) or "offset" (the
	// clock plus offset), for entries not applied by ApplyAt.
	entryTime string
	offset    time.Duration
}

func (r *replica) time(e *fsmEnv, ent entry) int64 {
	switch {
	case ent.at || r.entryTime == "":
		return ent.time
	case r.entryTime == "none":
		return 0
	default:
		return e.n.now + int64(r.offset)
	}
}

func (e *fsmEnv) replica(c *transcript.Command, b *strings.Builder) {
	c.Only(append(append([]string{"from", "entry-time"}, configOptions...), localOptions...)...)
	r := &replica{name: e.pos(c, 0)}
	for _, o := range e.replicas {
		if o.name == r.name {
			c.Fatalf("replica %s exists", r.name)
		}
	}
	switch et := c.Str("entry-time", ""); et {
	case "", "none":
		r.entryTime = et
	default:
		r.entryTime, r.offset = "offset", c.ParseDuration(et)
	}
	var err error
	switch c.Str("from", "") {
	case "snapshot":
		for _, o := range configOptions {
			if c.Has(o) {
				c.Fatalf("%s: a restored replica has the snapshot's configuration", o)
			}
		}
		r.f, err = raftfsm.Restore(bytes.NewReader(e.n.snapshot()), options(c)...)
		r.applied = len(e.log)
		fmt.Fprintf(b, "%s restored at entry %d", r.name, r.applied)
	case "":
		r.f, err = raftfsm.New(config(c), options(c)...)
	default:
		c.Fatalf("from=snapshot or nothing")
	}
	if err != nil {
		c.Fatalf("%v", err)
	}
	e.replicas = append(e.replicas, r)
	if r.applied == 0 {
		e.follow(nil)
		fmt.Fprintf(b, "%s applied %d entries", r.name, r.applied)
	}
}

// follow applies to each replica the entries of the log it has not
// applied; res is the first state machine's result for the last entry
// (nil when a replica catches up). A replica that prepared its own command
// for the last entry (poll everywhere) applies that instead. It notes a
// replica whose command, response or snapshot differs from the first's.
func (e *fsmEnv) follow(res *raftfsm.Result) {
	if len(e.replicas) == 0 {
		return
	}
	want := e.n.snapshot()
	for _, r := range e.replicas {
		for r.applied < len(e.log) {
			ent := e.log[r.applied]
			last := r.applied == len(e.log)-1
			if cmd, ok := e.own[r]; ok && last {
				data, err := e.encodeOn(e.cur, r.f, cmd)
				if err != nil {
					e.notes = append(e.notes, fmt.Sprintf("%s: encode: %v", r.name, err))
				} else {
					same := "same"
					if !bytes.Equal(data, ent.data) {
						same = "different"
					}
					e.notes = append(e.notes, fmt.Sprintf("%s: prepared the %s command", r.name, same))
					ent.data = data
				}
			}
			r.applied++
			got, err := apply(r.f, ck.Entry{Index: uint64(r.applied), Term: 1, Time: r.time(e, ent)}, ent)
			switch {
			case err != nil:
				e.notes = append(e.notes, fmt.Sprintf("%s: entry %d: %v", r.name, r.applied, err))
			case res != nil && last && res.Poll != nil:
				if reflect.DeepEqual(res.Poll, got.Poll) {
					if _, ok := e.own[r]; ok {
						e.notes = append(e.notes, fmt.Sprintf("%s: same response", r.name))
					}
				} else {
					var rb strings.Builder
					e.response(&rb, got.Poll)
					e.notes = append(e.notes, fmt.Sprintf("%s: different response:\n%s", r.name, rb.String()))
				}
			}
		}
		if !bytes.Equal(want, snapshotOf(e, r.f)) {
			e.notes = append(e.notes, fmt.Sprintf("%s: snapshot differs after entry %d", r.name, r.applied))
		}
	}
}

func snapshotOf(e *fsmEnv, f *raftfsm.FSM) []byte {
	var b bytes.Buffer
	if err := f.Snapshot(&b); err != nil {
		e.t.Fatal(err)
	}
	return b.Bytes()
}

// compare prints the log position and the snapshot's version, and for
// each replica whether its snapshot and its answers to queries are the
// first state machine's.
func (e *fsmEnv) compare(b *strings.Builder) {
	want := e.n.snapshot()
	fmt.Fprintf(b, "entry %d, snapshot version %d", len(e.log), want[3])
	for _, r := range e.replicas {
		var diffs []string
		if !bytes.Equal(want, snapshotOf(e, r.f)) {
			diffs = append(diffs, "snapshot")
		}
		wa, ga := answers(e.n.f), answers(r.f)
		for _, k := range answerKeys {
			if !reflect.DeepEqual(wa[k], ga[k]) {
				diffs = append(diffs, k)
			}
		}
		if len(diffs) == 0 {
			fmt.Fprintf(b, "\n%s: same snapshot, same answers", r.name)
		} else {
			fmt.Fprintf(b, "\n%s: different %s", r.name, strings.Join(diffs, ", "))
		}
	}
}

var answerKeys = []string{"last applied", "cluster version", "config", "jobs", "plans", "index", "quarantine", "tenants", "stats"}

// answers returns what f answers to each query.
func answers(f *raftfsm.FSM) map[string]any {
	jobs, _ := f.Jobs(scheduler.Filter{}, "", 0)
	var plans []ck.JobPlan
	for _, js := range jobs {
		_, p, _ := f.Job(js.Name)
		plans = append(plans, p)
	}
	view := f.Index()
	defer view.Close()
	q, _ := f.Quarantined("", 0)
	st := f.Stats()
	// The replica's own counts, not state: a restored replica starts
	// them afresh.
	st.SkippedChanges, st.BrokenInvariants = [scheduler.NumSkips]uint64{}, 0
	index, term, now := f.LastApplied()
	return map[string]any{
		"last applied":    []any{index, term, now},
		"cluster version": f.ClusterVersion(),
		"config":          f.Config(),
		"jobs":            jobs,
		"plans":           plans,
		"index":           []any{view.Len(), view.Blocks("", 0), view.Tombstones(ck.Tombstone{}, 0)},
		"quarantine":      q,
		"tenants":         f.Tenants(),
		"stats":           st,
	}
}

// malformed are commands no honest leader proposes, by name, for raw:
// each decodes but is not well-formed, or is refused by the state.
var malformed = map[string]func() *raftfsm.Command{
	"no-operation": func() *raftfsm.Command { return &raftfsm.Command{} },
	"two-operations": func() *raftfsm.Command {
		return &raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{}, TookOffice: &raftfsm.TookOffice{}}
	},
	"bad-block-id": func() *raftfsm.Command {
		return &raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: []ck.BlockMeta{{ID: "../x"}}}}
	},
	"empty-retention":  func() *raftfsm.Command { return &raftfsm.Command{Retention: &raftfsm.Retention{}} },
	"unknown-operator": func() *raftfsm.Command { return &raftfsm.Command{Operator: &raftfsm.Operator{Action: 99}} },
	"cancel-unknown-job": func() *raftfsm.Command {
		return &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: "nope"}}
	},
	"retry-unknown-job": func() *raftfsm.Command {
		return &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpRetry, Job: "nope"}}
	},
	"poll-without-worker": func() *raftfsm.Command { return &raftfsm.Command{Poll: &raftfsm.Poll{WorkerID: "", Seq: 1}} },
	"cluster-version-200": func() *raftfsm.Command {
		return &raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: 200}}
	},
}

// raw applies bytes no honest leader writes, or an entry again.
func (e *fsmEnv) raw(c *transcript.Command, b *strings.Builder) {
	c.Only("hex", "index")
	n := e.n
	var data []byte
	var err error
	switch {
	case c.Has("hex"):
		if data, err = hex.DecodeString(c.Str("hex", "")); err != nil {
			c.Fatalf("hex: %v", err)
		}
	case e.pos(c, 0) == "last":
		if len(e.log) == 0 {
			c.Fatalf("no entry yet")
		}
		data = e.log[len(e.log)-1].data
	default:
		mk, ok := malformed[e.pos(c, 0)]
		if !ok {
			c.Fatalf("no malformed command %s", e.pos(c, 0))
		}
		// Marshalled, not encoded: Encode refuses what does not validate.
		cmd := mk()
		cmd.Time = n.now
		if n.version == 0 {
			data, err = cmd.MarshalVersion(raftfsm.CommandVersion)
		} else {
			data, err = cmd.MarshalVersion(n.version)
		}
		if err != nil {
			c.Fatalf("marshal: %v", err)
		}
	}
	index := uint64(c.Int("index", int64(n.index+1)))
	var res *raftfsm.Result
	switch {
	case index == n.index+1:
		res, err = e.append(entry{data: data, time: n.now})
	case index <= n.index:
		res, err = n.f.Apply(ck.Entry{Index: index, Term: 1, Time: n.now}, data)
	default:
		c.Fatalf("index %d leaves a gap after %d", index, n.index)
	}
	switch {
	case err != nil:
		e.error(b, err)
	case res.Skipped:
		fmt.Fprintf(b, "skipped: entry %d is at or below the last applied, %d", index, n.index)
	default:
		fmt.Fprintf(b, "applied entry %d", index)
	}
}

// forge applies a poll command a hostile leader built: the worker
// completes the job with its token and version, and the outputs the job's
// worker would write.
func (e *fsmEnv) forge(c *transcript.Command, b *strings.Builder) {
	c.Only("seq")
	w, name := e.pos(c, 0), e.job(c, e.pos(c, 2))
	if e.pos(c, 1) != "complete" {
		c.Fatalf("forge <worker> complete jN")
	}
	js, _, ok := e.n.f.Job(name)
	reply, assigned := e.replies[name]
	if !ok || !assigned {
		c.Fatalf("%s is not assigned", e.pos(c, 2))
	}
	seq := uint64(c.Int("seq", int64(e.seq[w]+1)))
	e.seq[w] = max(e.seq[w], seq)
	outs := e.n.outputs(reply.Plan, uint64(reply.Token))
	cmd := &raftfsm.Command{Poll: &raftfsm.Poll{WorkerID: w, Seq: seq,
		Reports: []raftfsm.Report{{Job: name, Token: reply.Token, Status: ck.ReportSuccess}},
		Update: ck.PlanUpdate{Changes: []ck.Change{{Kind: ck.ChangeComplete, Job: name, Version: js.Version,
			Token: reply.Token, Worker: w, Outputs: outs}}}}}
	e.applyPoll(c, b, cmd, nil)
}
