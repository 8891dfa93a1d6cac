package planner

import (
	"fmt"
	"math"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/namekey"
)

// Admissible reports whether plan can be claimed now: nil if so, else an
// error wrapping [ErrNotAdmissible] that says why.
//
// The rule is stricter than "every source is queued and unclaimed", and
// cheap (O(k) for k sources, no per-block map): the sources must be exactly
// the k oldest queued blocks of the plan's key, in order — which is how the
// planner forms batches — and the plan's name must be the one the planner
// gives that key, those sources and the plan's sequence number, a number
// not below the planner's next one (see the package documentation on job
// names). A plan prepared on a view is refused if, meanwhile, its sources
// were claimed, returned to another position, dropped, or joined by an
// older returned block; refusing only costs a job this time.
func (p *Planner) Admissible(plan *ck.JobPlan) error {
	_, _, err := p.admissible(plan)
	return err
}

func (p *Planner) admissible(plan *ck.JobPlan) (*queue, uint64, error) {
	if plan == nil {
		return nil, 0, fmt.Errorf("no plan: %w", ErrNotAdmissible)
	}
	if len(plan.Sources) == 0 {
		return nil, 0, fmt.Errorf("job %s: no sources: %w", plan.Name, ErrNotAdmissible)
	}
	if plan.Level >= p.s.cfg.FinalLevel {
		return nil, 0, fmt.Errorf("job %s: level %d at or beyond the final level %d: %w", plan.Name, plan.Level, p.s.cfg.FinalLevel, ErrNotAdmissible)
	}
	seq, ok := nameSeq(plan.Name)
	if !ok {
		return nil, 0, fmt.Errorf("job %q: not a name the planner gives: %w", plan.Name, ErrNotAdmissible)
	}
	if seq < p.s.nextSeq || seq == math.MaxUint64 {
		return nil, 0, fmt.Errorf("job %s: sequence number %d already used (next is %d): %w", plan.Name, seq, p.s.nextSeq, ErrNotAdmissible)
	}
	k := key{tenant: plan.Tenant, shard: plan.Shard, level: plan.Level}
	q := p.lookup(k)
	if q == nil {
		return nil, 0, fmt.Errorf("job %s: no block queued for tenant %q, shard %d, level %d: %w", plan.Name, plan.Tenant, plan.Shard, plan.Level, ErrNotAdmissible)
	}
	if len(plan.Sources) > q.n {
		return nil, 0, fmt.Errorf("job %s: %d sources, %d blocks queued for its key: %w", plan.Name, len(plan.Sources), q.n, ErrNotAdmissible)
	}
	i, bad := 0, ""
	q.visit(0, func(items []item) bool {
		for j := range items {
			if i == len(plan.Sources) {
				return false
			}
			if items[j].id != plan.Sources[i] {
				bad = items[j].id
				return false
			}
			i++
		}
		return true
	})
	if i < len(plan.Sources) {
		return nil, 0, fmt.Errorf("job %s: source %d is %s, but the block queued at that position of its key is %s: %w", plan.Name, i, plan.Sources[i], bad, ErrNotAdmissible)
	}
	name := p.named.of(k, seq, plan.Sources, p.s.names)
	if name != plan.Name {
		return nil, 0, fmt.Errorf("job %s: the planner names these sources %s: %w", plan.Name, name, ErrNotAdmissible)
	}
	return q, seq, nil
}

// Claim creates the claim of a new job: if plan is admissible (see
// [Planner.Admissible]), its sources leave the queue and are recorded as
// claimed by plan.Name, the planner's next job sequence number moves past
// the plan's, and the fairness cursor moves to the plan's tenant. All or
// nothing: on error nothing changes.
func (p *Planner) Claim(e ck.Entry, plan *ck.JobPlan) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("planner: claim: %w", err)
	}
	q, seq, err := p.admissible(plan)
	if err != nil {
		return fmt.Errorf("planner: claim: %w", err)
	}
	p.tick(e.Time)
	q = p.own(q)
	old := q.head
	c := &claim{name: namekey.Of(plan.Name), k: q.k, items: q.take(len(plan.Sources))}
	p.s.claims.Mut(p.s.vmu).ReplaceOrInsert(c)
	p.s.nextSeq = seq + 1
	p.s.cursor, p.s.hasCursor = plan.Tenant, true
	p.s.counters.Claims++
	p.refresh(q, old)
	return nil
}

// getClaim returns the claim of a job.
func (s *state) getClaim(job string) (*claim, bool) {
	return s.claims.Get(&claim{name: namekey.Of(job)})
}

// endClaim removes a claim.
func (p *Planner) endClaim(c *claim) {
	p.s.claims.Mut(p.s.vmu).Delete(c)
}

// eachClaimOf calls fn for the claims of key k, in name order, until fn
// returns false. A job's name starts with its key's prefix (see jobName;
// restore checks it), so the claims of k are among those whose names
// start with it, which the claims by name hold together.
func (s *state) eachClaimOf(k key, fn func(*claim) bool) {
	var b [maxTenantInName + 40]byte
	prefix := string(appendKeyPrefix(b[:0], k))
	s.claims.AscendGreaterOrEqual(&claim{name: namekey.Of(prefix)}, func(c *claim) bool {
		if !strings.HasPrefix(c.name.String(), prefix) {
			return false
		}
		return c.k != k || fn(c)
	})
}

// Return ends the claim of job: the sources listed in keep go back into
// the queue at their original arrival positions, the others are forgotten.
// The state machine uses it for a cancelled job (keep = all sources), for
// a completion the index refused (keep = the surviving sources) and after
// retention (keep = the sources still live). A job without a claim, or a
// kept ID that is not a source of the job, returns an error and changes
// nothing.
func (p *Planner) Return(job string, keep []string) error {
	c, ok := p.s.getClaim(job)
	if !ok {
		return fmt.Errorf("planner: return %s: %w", job, errUnknownJob)
	}
	want := make(map[string]bool, len(keep))
	for _, id := range keep {
		want[id] = false
	}
	items := make([]item, 0, len(keep))
	for _, it := range c.items {
		if _, ok := want[it.id]; ok {
			want[it.id] = true
			items = append(items, it)
		}
	}
	if len(items) != len(want) {
		for _, id := range keep {
			if !want[id] {
				return fmt.Errorf("planner: return %s: block %s: %w", job, id, errNotSource)
			}
		}
	}
	p.endClaim(c)
	p.s.counters.Returns++
	p.s.counters.ReturnedBlocks += uint64(len(items))
	p.insert(c.k, items)
	return nil
}

// insert puts items (sorted by arrival) back into the queue of key k.
func (p *Planner) insert(k key, items []item) {
	if len(items) == 0 {
		return
	}
	q := p.lookup(k)
	if q == nil {
		q = p.newQueue(k)
	} else {
		q = p.own(q)
	}
	old := q.head
	p.s.counters.Duplicates += uint64(q.merge(items))
	p.refresh(q, old)
}

// Complete ends the claim of job after its sources were replaced by its
// outputs: the sources are gone for good.
func (p *Planner) Complete(job string) error {
	c, ok := p.s.getClaim(job)
	if !ok {
		return fmt.Errorf("planner: complete %s: %w", job, errUnknownJob)
	}
	p.endClaim(c)
	p.s.counters.Completions++
	return nil
}

// Claimed returns the sources job claims, in arrival order.
func (p *Planner) Claimed(job string) ([]string, bool) { return p.s.claimed(job) }

func (s *state) claimed(job string) ([]string, bool) {
	c, ok := s.getClaim(job)
	if !ok {
		return nil, false
	}
	ids := make([]string, len(c.items))
	for i := range c.items {
		ids[i] = c.items[i].id
	}
	return ids, true
}
