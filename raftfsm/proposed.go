package raftfsm

import (
	"bytes"

	ck "github.com/compactkit/compactkit"
)

// maxProposed bounds the polls a replica keeps between encoding them and
// applying their entries (see proposed).
const maxProposed = 4

// proposed is a poll this replica encoded (Encode), kept until it applies
// the entry that holds it: a leader applies the entries it proposed, and
// an entry whose bytes are exactly a poll's encoding decodes to a copy of
// that poll, so Apply takes the copy instead of decoding the bytes.
// Decoding a poll is about a tenth of applying it. Only polls in the full
// form are kept, whose decoding gives back every field (see
// clonePoll); a replica that applies an entry it did not encode decodes
// it, so replicas reach the same state either way.
type proposed struct {
	data    []byte // the entry's bytes, the replica's own copy
	version byte
	cmd     *Command // as decoding data gives it, shared with nothing
}

// remember keeps the poll of cmd, which data encodes at version, for
// take. The caller holds f.mu.
func (f *FSM) remember(cmd *Command, data []byte, version byte) {
	if cmd.Poll == nil || version < fullFormVersion {
		return
	}
	if len(f.proposed) == maxProposed {
		copy(f.proposed, f.proposed[1:])
		f.proposed = f.proposed[:maxProposed-1]
	}
	f.proposed = append(f.proposed, proposed{data: bytes.Clone(data), version: version, cmd: &Command{Time: cmd.Time, Poll: clonePoll(cmd.Poll)}})
}

// take returns the command that data decodes to if data is a poll this
// replica encoded and still keeps, forgetting it. The caller holds f.mu.
func (f *FSM) take(data []byte) (*Command, byte, bool) {
	for i, p := range f.proposed {
		if bytes.Equal(p.data, data) {
			f.proposed = append(f.proposed[:i], f.proposed[i+1:]...)
			return p.cmd, p.version, true
		}
	}
	return nil, 0, false
}

// clonePoll returns a copy of p that shares no slice or pointer with it,
// as decoding p's encoding gives it: an empty list is an empty slice, not
// nil (TestClonePollDecodes holds it to that).
func clonePoll(p *Poll) *Poll {
	c := *p
	c.Reports = cloneSlice(p.Reports)
	c.Update.Changes = cloneSlice(p.Update.Changes)
	for i := range c.Update.Changes {
		ch := &c.Update.Changes[i]
		if ch.Plan != nil {
			plan := *ch.Plan
			plan.Sources = cloneSlice(plan.Sources)
			plan.Tombstones = cloneSlice(plan.Tombstones)
			ch.Plan = &plan
		}
		ch.Outputs = cloneBlocks(ch.Outputs)
	}
	return &c
}

func cloneBlocks(bs []ck.BlockMeta) []ck.BlockMeta {
	c := cloneSlice(bs)
	for i := range c {
		c[i].Datasets = cloneSlice(c[i].Datasets)
	}
	return c
}

// cloneSlice copies s into a new slice, empty rather than nil.
func cloneSlice[T any](s []T) []T {
	return append(make([]T, 0, len(s)), s...)
}
