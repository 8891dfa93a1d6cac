package raftfsm

import (
	"bytes"
	"unicode/utf8"

	"github.com/compactkit/compactkit/internal/codec"
)

// maxProposed bounds the polls a replica keeps between encoding them and
// applying their entries (see proposed).
const maxProposed = 4

// proposed is a poll this replica encoded (Encode), kept until it applies
// the entry that holds it: a leader applies the entries it proposed, and
// an entry whose bytes are exactly a poll's encoding decodes to a copy of
// that poll, so Apply takes the copy instead of decoding the bytes.
// Decoding a poll is about a tenth of applying it. Only polls in the full
// form that decode are kept (see decodedPoll), whose decoding gives back
// every field; a replica that applies an entry it did not encode decodes
// it, so replicas reach the same state either way.
type proposed struct {
	data    []byte // the entry's bytes, the replica's own copy (reused once taken)
	version byte
	cmd     *Command // as decoding data gives it, shared with nothing
}

// maxSpareBytes bounds the encoding buffers the FSM keeps for reuse.
const maxSpareBytes = 1 << 20

// proposal returns what to keep of cmd, which data encodes at version, if
// its entry decodes: data itself, which the caller gives up, and a copy of
// the poll. It copies without the FSM's lock.
func proposal(cmd *Command, data []byte, version byte) (proposed, bool) {
	// Encode validated cmd before stamping it: a negative stamp is the one
	// way the entry can fail the validation decoding runs.
	if cmd.Poll == nil || version < fullFormVersion || cmd.Time < 0 || len(data) > codec.Default.Limits().MaxBytes {
		return proposed{}, false
	}
	// Validation accepts only valid UTF-8 strings, as decoding does
	// (TestValidPollStrings): only the lists' lengths remain to check.
	poll, ok := decodedPoll(cmd.Poll, false)
	if !ok {
		return proposed{}, false
	}
	return proposed{data: data, version: version, cmd: &Command{Time: cmd.Time, Poll: poll}}, true
}

// spareBuf returns an empty encoding buffer to reuse, or nil. The caller
// holds f.mu.
func (f *FSM) spareBuf() []byte {
	n := len(f.spare)
	if n == 0 {
		return nil
	}
	b := f.spare[n-1]
	f.spare[n-1] = nil
	f.spare = f.spare[:n-1]
	return b
}

// keepSpare keeps b, an encoding buffer nothing else holds, for spareBuf,
// unless it is large or maxProposed are kept already. The caller holds
// f.mu.
func (f *FSM) keepSpare(b []byte) {
	if cap(b) <= maxSpareBytes && len(f.spare) < maxProposed {
		f.spare = append(f.spare, b[:0])
	}
}

// remember keeps p for take, forgetting the oldest poll kept if there are
// maxProposed. The caller holds f.mu.
func (f *FSM) remember(p proposed) {
	if len(f.proposed) == maxProposed {
		f.keepSpare(f.proposed[0].data)
		copy(f.proposed, f.proposed[1:])
		f.proposed = f.proposed[:maxProposed-1]
	}
	f.proposed = append(f.proposed, p)
}

// take returns the command that data decodes to if data is a poll this
// replica encoded and still keeps, forgetting it. The caller holds f.mu.
func (f *FSM) take(data []byte) (*Command, byte, bool) {
	for i, p := range f.proposed {
		if bytes.Equal(p.data, data) {
			f.keepSpare(p.data)
			n := len(f.proposed)
			copy(f.proposed[i:], f.proposed[i+1:])
			f.proposed[n-1] = proposed{} // keep nothing alive
			f.proposed = f.proposed[:n-1]
			return p.cmd, p.version, true
		}
	}
	return nil, 0, false
}

// decodedPoll returns what decoding p's full-form encoding gives: a copy
// that shares no slice or plan with p, its empty lists empty slices, not
// nil; and whether decoding succeeds at all: every list within the
// decoder's array limit (the nesting is fixed by the types) and, if strs
// is set, every string valid UTF-8 (a validated poll's are).
// TestDecodedPoll holds it to the decoder.
func decodedPoll(p *Poll, strs bool) (*Poll, bool) {
	c := *p
	d := decodeCheck{max: codec.Default.Limits().MaxArrayElements, strs: strs}
	d.str(c.WorkerID)
	c.Reports = cloneList(&d, p.Reports)
	for i := range c.Reports {
		d.str(c.Reports[i].Job)
	}
	c.Update.Changes = cloneList(&d, p.Update.Changes)
	for i := range c.Update.Changes {
		ch := &c.Update.Changes[i]
		d.str(ch.Job)
		d.str(ch.Worker)
		d.str(ch.Reason)
		if ch.Plan != nil {
			plan := *ch.Plan
			d.str(plan.Name)
			d.str(plan.Tenant)
			plan.Sources = cloneList(&d, plan.Sources)
			for _, s := range plan.Sources {
				d.str(s)
			}
			plan.Tombstones = cloneList(&d, plan.Tombstones)
			for _, t := range plan.Tombstones {
				d.str(t.Target)
			}
			ch.Plan = &plan
		}
		ch.Outputs = cloneList(&d, ch.Outputs)
		for j := range ch.Outputs {
			b := &ch.Outputs[j]
			d.str(b.ID)
			d.str(b.Tenant)
			b.Datasets = cloneList(&d, b.Datasets)
			for k := range b.Datasets {
				d.str(b.Datasets[k].Tenant)
				d.str(b.Datasets[k].Name)
			}
		}
	}
	return &c, !d.bad
}

// decodeCheck collects whether a value's encoding decodes.
type decodeCheck struct {
	max  int  // the decoder's array limit
	strs bool // check the strings
	bad  bool // a string or a list does not decode
}

func (d *decodeCheck) str(s string) {
	if d.strs && !utf8.ValidString(s) {
		d.bad = true
	}
}

// cloneList copies s into a new slice, empty rather than nil, as decoding
// gives it, and notes a list longer than the decoder takes.
func cloneList[T any](d *decodeCheck, s []T) []T {
	if len(s) > d.max {
		d.bad = true
	}
	return append(make([]T, 0, len(s)), s...)
}
