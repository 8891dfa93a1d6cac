package runnertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/worker"
)

// A JSON block format — one object per block holding its records — and
// its runner, correct unless a flaw is set: one flaw per property.
type flaw int

const (
	sound        flaw = iota
	strayWrite        // Placement: writes an object outside the attempt's prefix
	miscounted        // Metadata: counts one record more than it writes
	dropsRecord       // Records: loses a source's last record
	sameLevel         // Accepted: outputs at the job's level, which the state machine refuses
	skipsMissing      // Failure: skips a source it cannot read
	ignoresToken      // Retry: names its outputs without the token
	ignoresCtx        // Cancel: runs on after its context is cancelled
	writesLate        // NoLateWrite: finishes its write in the background
)

func jsonFormat(fl flaw) Format {
	return Format{
		Runner: worker.RunnerFunc(func(ctx context.Context, s blockmerge.Store, p *ck.JobPlan, tok fencing.Token) ([]ck.BlockMeta, error) {
			return jsonRun(ctx, s, p, tok, fl)
		}),
		Layout:      blockmerge.ObjectLayout,
		Write:       jsonWrite,
		Read:        jsonRead,
		CancelBound: 200 * time.Millisecond,
	}
}

func jsonWrite(ctx context.Context, s blockmerge.Store, b ck.BlockMeta, recs []Record) (ck.BlockMeta, error) {
	data, err := json.Marshal(recs)
	if err != nil {
		return b, err
	}
	return b, s.Put(ctx, ck.ObjectKey(b.ID), bytes.NewReader(data))
}

func jsonRead(ctx context.Context, s blockmerge.Store, b ck.BlockMeta) ([]Record, error) {
	r, err := s.Get(ctx, ck.ObjectKey(b.ID))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var recs []Record
	return recs, json.NewDecoder(r).Decode(&recs)
}

func jsonRun(ctx context.Context, s blockmerge.Store, p *ck.JobPlan, tok fencing.Token, fl flaw) ([]ck.BlockMeta, error) {
	var all []Record
	for _, src := range p.Sources {
		if fl == ignoresCtx {
			time.Sleep(time.Second)
		} else if err := ctx.Err(); err != nil {
			return nil, err
		}
		recs, err := jsonRead(context.WithoutCancel(ctx), s, ck.BlockMeta{ID: src})
		if err != nil {
			if fl == skipsMissing {
				continue
			}
			return nil, fmt.Errorf("read source %s: %w", src, err)
		}
		if fl == dropsRecord {
			recs = recs[:len(recs)-1]
		}
		all = append(all, recs...)
	}
	if fl == ignoresToken {
		tok = 1
	}
	out := ck.BlockMeta{ID: ck.OutputID(p.Name, tok, 0), Tenant: p.Tenant, Shard: p.Shard, Level: p.Level + 1, MinTime: 1 << 62}
	for _, r := range all {
		out.MinTime, out.MaxTime = min(out.MinTime, r.Time), max(out.MaxTime, r.Time)
	}
	if len(all) == 0 {
		out.MinTime = 0
	}
	out.Datasets = []ck.DatasetMeta{{Name: "records", Records: int64(len(all)), MinTime: out.MinTime, MaxTime: out.MaxTime}}
	switch fl {
	case miscounted:
		out.Datasets[0].Records++
	case sameLevel:
		out.Level = p.Level
	case strayWrite:
		if err := s.Put(ctx, "blocks/stray", bytes.NewReader(nil)); err != nil {
			return nil, err
		}
	case writesLate:
		go func() {
			time.Sleep(10 * time.Millisecond)
			_, _ = jsonWrite(context.Background(), s, out, all)
		}()
		return []ck.BlockMeta{out}, nil
	}
	data, err := json.Marshal(all)
	if err != nil {
		return nil, err
	}
	if err := s.Put(ctx, ck.ObjectKey(out.ID), bytes.NewReader(data)); err != nil {
		return nil, err
	}
	return []ck.BlockMeta{out}, nil
}

// The sound format passes the whole suite.
func TestSoundFormat(t *testing.T) {
	Run(t, jsonFormat(sound))
}

// Each flawed format fails the property its flaw breaks.
func TestFlawsCaught(t *testing.T) {
	flawOf := map[string]flaw{
		"Placement": strayWrite, "Metadata": miscounted, "Records": dropsRecord, "Accepted": sameLevel,
		"Failure": skipsMissing, "Retry": ignoresToken, "Cancel": ignoresCtx, "NoLateWrite": writesLate,
	}
	all := append(append([]struct {
		name string
		fn   check
	}{}, dataChecks...), timingChecks...)
	if len(all) != len(flawOf) {
		t.Fatalf("%d properties, %d flaws", len(all), len(flawOf))
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			f := jsonFormat(flawOf[c.name])
			err := runCheck(t.Context(), &f, c.fn, jobs().Example(1))
			if err == nil {
				t.Fatalf("the flawed format passed %s", c.name)
			}
			if errors.Is(err, context.Canceled) && c.name != "Cancel" {
				t.Fatalf("caught by the context, not the property: %v", err)
			}
			t.Logf("caught: %v", err)
		})
	}
}
