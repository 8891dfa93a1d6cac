package compactkittest

import (
	"time"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// Entry is one entry of a history: its position and time in the log, and
// its data, a command encoded by the leader ([raftfsm.FSM.Encode]).
type Entry struct {
	ck.Entry
	Data []byte
}

// History generates histories of compactkit's commands of between minLen
// and maxLen entries, on a log whose state machine starts from cfg (which
// must be valid): blocks added (of tenants "acme" and "globex", shards 0
// and 1; now and then one already added), the polls of a [Fleet] of three
// workers (retries included), leader changes (a new term and its
// TookOffice) and time passing. Indexes grow by one, or now and then skip
// one or two, which a host's log would give its own entries. Each command is applied to a reference
// state machine as it is drawn, so every poll is prepared against the
// state it is applied to; applying the entries in order to a fresh state
// machine made with cfg reproduces that state.
func History(cfg raftfsm.Config, minLen, maxLen int) *rapid.Generator[[]Entry] {
	return rapid.Custom(func(t *rapid.T) []Entry {
		f, err := raftfsm.New(cfg)
		if err != nil {
			t.Fatalf("compactkittest: history: %v", err)
		}
		h := &history{t: t, f: f, fleet: NewFleet(), now: defaultStart, term: 1}
		space := Space{Tenants: []string{"acme", "globex"}, Shards: []uint32{0, 1}, Start: defaultStart}
		n := rapid.IntRange(minLen, maxLen).Draw(t, "entries")
		for len(h.entries) < n {
			switch rapid.IntRange(0, 9).Draw(t, "step") {
			case 0, 1, 2:
				bs := Blocks(space, 1, 4).Draw(t, "blocks")
				if len(h.added) > 0 && rapid.IntRange(0, 4).Draw(t, "again") == 0 {
					bs = append(bs, rapid.SampledFrom(h.added).Draw(t, "added"))
				}
				res := h.propose(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}})
				for i, br := range res.Blocks {
					if br.Err == nil {
						h.added = append(h.added, bs[i])
					}
				}
			case 3, 4, 5, 6:
				req := h.fleet.Poll(f).Draw(t, "poll")
				cmd, err := f.Prepare(req, h.now)
				if err != nil {
					h.fleet.Answered(req, nil)
					continue
				}
				h.fleet.Answered(req, h.propose(cmd).Poll)
			case 7:
				h.term++
				h.propose(&raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: "leader"}})
			default:
				h.now += int64(rapid.IntRange(1, 120).Draw(t, "seconds")) * int64(time.Second)
			}
		}
		return h.entries
	})
}

type history struct {
	t       *rapid.T
	f       *raftfsm.FSM
	fleet   *Fleet
	now     int64
	index   uint64
	term    uint64
	added   []ck.BlockMeta
	entries []Entry
}

// propose encodes cmd as the leader would, appends it and applies it.
func (h *history) propose(cmd *raftfsm.Command) *raftfsm.Result {
	data, err := h.f.Encode(cmd, h.now)
	if err != nil {
		h.t.Fatalf("compactkittest: history: encode: %v", err)
	}
	h.index++
	if rapid.IntRange(0, 3).Draw(h.t, "gap") == 0 {
		h.index += uint64(rapid.IntRange(1, 2).Draw(h.t, "others"))
	}
	e := Entry{Entry: ck.Entry{Index: h.index, Term: h.term, Time: h.now}, Data: data}
	res, err := h.f.Apply(e.Entry, e.Data)
	if err != nil {
		h.t.Fatalf("compactkittest: history: apply %v: %v", e.Entry, err)
	}
	h.entries = append(h.entries, e)
	return res
}
