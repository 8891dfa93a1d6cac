package compactkit_test

import (
	"fmt"
	"time"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/compactkittest"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/ident"
)

// Generators of valid values, shared by the tests of this package. Names
// and IDs come from compactkittest; blocks, plans and updates are drawn
// from the whole valid domain (negative times, multi-tenant segments,
// any shard), wider than compactkittest.Block's.

func genBlock() *rapid.Generator[ck.BlockMeta] {
	return rapid.Custom(func(t *rapid.T) ck.BlockMeta {
		minT := rapid.Int64Range(-1<<40, 1<<40).Draw(t, "min")
		maxT := minT + rapid.Int64Range(0, 1<<30).Draw(t, "span")
		b := ck.BlockMeta{
			ID:      compactkittest.ID().Draw(t, "id"),
			Tenant:  rapid.SampledFrom([]string{"", "acme", "globex"}).Draw(t, "tenant"),
			Shard:   rapid.Uint32Range(0, 64).Draw(t, "shard"),
			Level:   rapid.Uint32Range(0, 3).Draw(t, "level"),
			MinTime: minT,
			MaxTime: maxT,
			Size:    rapid.Int64Range(0, 1<<40).Draw(t, "size"),
		}
		n := rapid.IntRange(1, 4).Draw(t, "datasets")
		b.Datasets = make([]ck.DatasetMeta, 0, n)
		for i := range n {
			d := ck.DatasetMeta{
				Name:    fmt.Sprintf("svc-%d", i),
				Size:    rapid.Int64Range(0, 1<<30).Draw(t, "dsize"),
				Records: rapid.Int64Range(0, 1<<30).Draw(t, "records"),
				MinTime: rapid.Int64Range(minT, maxT).Draw(t, "dmin"),
			}
			d.MaxTime = rapid.Int64Range(d.MinTime, maxT).Draw(t, "dmax")
			if b.Tenant == "" {
				d.Tenant = rapid.SampledFrom([]string{"acme", "globex", "initech"}).Draw(t, "dtenant")
			}
			b.Datasets = append(b.Datasets, d)
		}
		return b
	})
}

func genTombstone() *rapid.Generator[ck.Tombstone] {
	return rapid.Custom(func(t *rapid.T) ck.Tombstone {
		if rapid.Bool().Draw(t, "prefix") {
			return ck.Tombstone{Kind: ck.TombstonePrefix, Target: ck.AttemptPrefix(compactkittest.Name().Draw(t, "job"), fencing.Token(rapid.Uint64Min(1).Draw(t, "token")))}
		}
		return ck.Tombstone{Kind: ck.TombstoneBlock, Target: compactkittest.ID().Draw(t, "target")}
	})
}

func genPlan() *rapid.Generator[ck.JobPlan] {
	return rapid.Custom(func(t *rapid.T) ck.JobPlan {
		p := ck.JobPlan{
			Name:       compactkittest.Name().Draw(t, "name"),
			Tenant:     rapid.SampledFrom([]string{"", "acme"}).Draw(t, "tenant"),
			Shard:      rapid.Uint32().Draw(t, "shard"),
			Level:      rapid.Uint32Range(0, 5).Draw(t, "level"),
			Sources:    rapid.SliceOfNDistinct(compactkittest.ID(), 0, 8, rapid.ID).Draw(t, "sources"),
			Tombstones: rapid.SliceOfNDistinct(genTombstone(), 0, 3, ck.Tombstone.String).Draw(t, "tombstones"),
		}
		if len(p.Sources) == 0 && len(p.Tombstones) == 0 {
			p.Sources = []string{compactkittest.ID().Draw(t, "source")}
		}
		return p
	})
}

func genUpdate() *rapid.Generator[ck.StatusUpdate] {
	return rapid.Custom(func(t *rapid.T) ck.StatusUpdate {
		u := ck.StatusUpdate{
			Job:       compactkittest.Name().Draw(t, "job"),
			Token:     fencing.Token(rapid.Uint64Min(1).Draw(t, "token")),
			Status:    ck.ReportStatus(rapid.IntRange(1, 4).Draw(t, "status")),
			Outputs:   []ck.BlockMeta{},
			Signature: []byte{},
		}
		if u.Status == ck.ReportSuccess {
			u.Outputs = rapid.SliceOfNDistinct(genBlock(), 1, 3, func(b ck.BlockMeta) string { return b.ID }).Draw(t, "outputs")
		}
		if rapid.Bool().Draw(t, "signed") {
			u.Signature = rapid.SliceOfN(rapid.Byte(), 1, ident.MaxSignatureLen).Draw(t, "signature")
		}
		if u.Status == ck.ReportFailure {
			u.Reason = rapid.StringN(0, 20, 40).Draw(t, "reason")
		}
		return u
	})
}

func genRequest() *rapid.Generator[ck.PollRequest] {
	return rapid.Custom(func(t *rapid.T) ck.PollRequest {
		return ck.PollRequest{
			WorkerID:  compactkittest.Name().Draw(t, "worker"),
			Seq:       rapid.Uint64Min(1).Draw(t, "seq"),
			Updates:   rapid.SliceOfNDistinct(genUpdate(), 0, 4, func(u ck.StatusUpdate) string { return u.Job }).Draw(t, "updates"),
			FreeSlots: rapid.Int32Range(0, 1000).Draw(t, "slots"),
		}
	})
}

func genResponse() *rapid.Generator[ck.PollResponse] {
	return rapid.Custom(func(t *rapid.T) ck.PollResponse {
		n := rapid.IntRange(0, 4).Draw(t, "n")
		r := ck.PollResponse{Jobs: make([]ck.JobReply, 0, n)}
		for range n {
			j := ck.JobReply{
				Job:       compactkittest.Name().Draw(t, "job"),
				Outcome:   ck.Outcome(rapid.IntRange(1, 5).Draw(t, "outcome")),
				Token:     fencing.Token(rapid.Uint64().Draw(t, "token")),
				Deadline:  rapid.Int64().Draw(t, "deadline"),
				Lease:     time.Duration(rapid.Int64Range(0, 1<<40).Draw(t, "lease")),
				Signature: []byte{},
			}
			if j.Outcome == ck.OutcomeAssigned {
				p := genPlan().Draw(t, "plan")
				p.Name = j.Job
				j.Plan = &p
				if rapid.Bool().Draw(t, "signed") {
					j.Signature = rapid.SliceOfN(rapid.Byte(), 1, ident.MaxSignatureLen).Draw(t, "signature")
				}
			}
			r.Jobs = append(r.Jobs, j)
		}
		return r
	})
}

func genChange() *rapid.Generator[ck.Change] {
	return rapid.Custom(func(t *rapid.T) ck.Change {
		c := ck.Change{
			Kind:    ck.ChangeKind(rapid.IntRange(1, 9).Draw(t, "kind")),
			Job:     compactkittest.Name().Draw(t, "job"),
			Version: rapid.Uint64().Draw(t, "version"),
			Outputs: []ck.BlockMeta{},
		}
		switch c.Kind {
		case ck.ChangeAdd:
			p := genPlan().Draw(t, "plan")
			p.Name = c.Job
			c.Plan = &p
			c.Version = 0
		case ck.ChangeAssign:
			c.Worker = compactkittest.Name().Draw(t, "worker")
		case ck.ChangeRenew, ck.ChangeFail, ck.ChangeRelease, ck.ChangeComplete:
			c.Worker = compactkittest.Name().Draw(t, "worker")
			c.Token = fencing.Token(rapid.Uint64Min(1).Draw(t, "token"))
			if c.Kind == ck.ChangeComplete {
				c.Outputs = rapid.SliceOfNDistinct(genBlock(), 0, 2, func(b ck.BlockMeta) string { return b.ID }).Draw(t, "outputs")
			}
			if c.Kind == ck.ChangeFail {
				c.Reason = ident.ClipReason(rapid.StringN(0, 40, ident.MaxReasonLen+8).Draw(t, "reason"))
			}
		}
		return c
	})
}

func genPlanUpdate() *rapid.Generator[ck.PlanUpdate] {
	return rapid.Custom(func(t *rapid.T) ck.PlanUpdate {
		return ck.PlanUpdate{
			Time:       rapid.Int64().Draw(t, "time"),
			Changes:    rapid.SliceOfN(genChange(), 0, 6).Draw(t, "changes"),
			TokenIndex: rapid.Uint64().Draw(t, "token index"),
		}
	})
}

func fencingToken(v uint64) fencing.Token { return fencing.Token(v) }
