package raftfsm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/compactkit/compactkit/internal/enum"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/policy"
)

// policyGradesVersion is the first cluster version that grades a tenant's
// backpressure again on every change of its queue (retention, marks,
// requeues, cancellations, failures, as well as added blocks and claims),
// and compares its debt thresholds with ready batches
// (policy.Load.ReadyBatches) rather than block-seconds.
const policyGradesVersion byte = 6

// capFreedVersion is the first cluster version in which a poll that ends
// jobs of a capped tenant (completion, failure, release) may start the
// tenant's next jobs in the same poll, as if it had no cap.
const capFreedVersion byte = 6

// recordsVersion is the first cluster version in which the index
// tombstones the sources of an applied replacement as one record, which a
// job attaches, detaches and confirms whole (see package index).
const recordsVersion byte = 6

// PolicyAction is what a [PolicyCommand] does.
type PolicyAction uint8

// The policy actions.
const (
	// PolicySet sets a tenant's own policy, or with All the default policy
	// of every tenant without its own.
	PolicySet PolicyAction = iota + 1
	// PolicyClear removes a tenant's own policy (it follows the default
	// again), or with All resets the default to the zero policy. Clearing
	// a policy that is not set changes nothing.
	PolicyClear
	// PolicyCompactNow plans a tenant's queued blocks (with All, every
	// tenant's), at one level or at every level, without waiting for
	// their batches to fill or age: the blocks queued at or before the
	// command's time are planned as soon as workers poll. Repeating it is
	// harmless (it moves the time forward). It ends by itself once none of
	// those blocks is queued any more.
	PolicyCompactNow
)

// String returns the action name.
func (a PolicyAction) String() string {
	return enum.Name("PolicyAction", a, PolicySet, "set", "clear", "compact_now")
}

// PolicyCommand changes the replicated scheduling policies (see package
// policy): from cluster version 5.
//
// A tenant is named by Tenant, or every tenant by All (Tenant empty): the
// empty tenant is a tenant like any other (its blocks are the multi-tenant
// segments), so "every tenant" is said explicitly.
type PolicyCommand struct {
	Action PolicyAction
	Tenant string
	All    bool
	// Level restricts PolicyCompactNow to one level; nil means every
	// level. Other actions refuse it.
	Level *uint32
	// Policy is the policy PolicySet sets; other actions refuse it.
	Policy *policy.Tenant
	// By names who issued the command, as [Operator.By].
	By string
}

// MaxPolicyTenants bounds the tenants with a policy of their own, and
// MaxCompactNow the compact-now requests in force: a set command beyond
// them is refused.
const (
	MaxPolicyTenants = 100_000
	MaxCompactNow    = 1024
)

func (p *PolicyCommand) validate() error {
	if err := ident.ValidateTenant(p.Tenant); err != nil {
		return fmt.Errorf("raftfsm: policy %s: %w", p.Action, err)
	}
	if p.All && p.Tenant != "" {
		return fmt.Errorf("raftfsm: policy %s: tenant %q with all: %w", p.Action, p.Tenant, ErrInvalidCommand)
	}
	if len(p.By) > maxOperatorNameLen || !utf8.ValidString(p.By) || strings.ContainsFunc(p.By, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return fmt.Errorf("raftfsm: policy %s: issuer %q: at most %d bytes of printable UTF-8: %w", p.Action, p.By, maxOperatorNameLen, ErrInvalidCommand)
	}
	switch p.Action {
	case PolicySet:
		if p.Policy == nil {
			return fmt.Errorf("raftfsm: policy set without a policy: %w", ErrInvalidCommand)
		}
		if err := checkPolicy(p.Policy); err != nil {
			return fmt.Errorf("raftfsm: policy set: %w: %w", ErrInvalidCommand, err)
		}
	case PolicyClear, PolicyCompactNow:
		if p.Policy != nil {
			return fmt.Errorf("raftfsm: policy %s with a policy: %w", p.Action, ErrInvalidCommand)
		}
	default:
		return fmt.Errorf("raftfsm: policy action %d: %w", uint8(p.Action), ErrInvalidCommand)
	}
	if p.Level != nil && p.Action != PolicyCompactNow {
		return fmt.Errorf("raftfsm: policy %s with a level: %w", p.Action, ErrInvalidCommand)
	}
	return nil
}

// checkPolicy reports whether a policy is valid and its level overrides
// within the planner's bounds.
func checkPolicy(p *policy.Tenant) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return planner.CheckLevels(p.Levels)
}

// policyRec is the encoding of a policy.Tenant, in commands and
// snapshots: an array of its eleven fields. In version 5's compact form,
// the parts added after the first release with policies (level overrides
// and run windows, shard thresholds, the per-shard cap) are one eighth
// item, written when one of them is set, so that a policy without them
// keeps the bytes of the first release with policies.
type policyRec struct {
	_             struct{} `cbor:",toarray"`
	Class         uint8
	MaxInProgress uint32
	Mode          uint8
	Windows       []windowRec
	NotBefore     int64
	Pressure      [8]int64 // slow blocks, stop blocks, slow ready batches, stop ready batches: On, Off each
	StaleAfter    int64
	Levels        []levelRec `codec:"optional,group"`
	Runs          []levelRunRec
	ShardPressure [8]int64
	MaxPerShard   uint32
}

type levelRec struct {
	_          struct{} `cbor:",toarray"`
	Level      uint32
	MaxBlocks  int
	MaxBytes   int64
	MaxAge     int64
	CrossShard uint8
}

type levelRunRec struct {
	_       struct{} `cbor:",toarray"`
	Level   uint32
	Mode    uint8
	Windows []windowRec
}

type windowRec struct {
	_      struct{} `cbor:",toarray"`
	Days   uint8
	Start  uint16
	End    uint16
	Offset int16
}

func recordPolicy(p *policy.Tenant) policyRec {
	r := policyRec{
		Class: uint8(p.Class), MaxInProgress: p.MaxInProgress, Mode: uint8(p.Run.Mode), NotBefore: p.NotBefore,
		Windows: recordWindows(p.Run.Windows), Pressure: thresholdsRec(p.Pressure), StaleAfter: int64(p.StaleAfter),
		ShardPressure: thresholdsRec(p.ShardPressure), MaxPerShard: p.MaxInProgressPerShard,
	}
	for _, l := range p.Levels {
		r.Levels = append(r.Levels, levelRec{Level: l.Level, MaxBlocks: l.MaxBlocks, MaxBytes: l.MaxBytes, MaxAge: int64(l.MaxAge), CrossShard: uint8(l.CrossShard)})
	}
	for _, lr := range p.LevelRuns {
		r.Runs = append(r.Runs, levelRunRec{Level: lr.Level, Mode: uint8(lr.Run.Mode), Windows: recordWindows(lr.Run.Windows)})
	}
	return r
}

// thresholdsRec and thresholdsOf convert thresholds to and from their
// encoding: slow blocks, stop blocks, slow ready batches, stop ready
// batches, On and Off each.
func thresholdsRec(th policy.Thresholds) [8]int64 {
	return [8]int64{th.SlowBlocks.On, th.SlowBlocks.Off, th.StopBlocks.On, th.StopBlocks.Off,
		th.SlowReadyBatches.On, th.SlowReadyBatches.Off, th.StopReadyBatches.On, th.StopReadyBatches.Off}
}

func thresholdsOf(a [8]int64) policy.Thresholds {
	return policy.Thresholds{
		SlowBlocks: policy.Limit{On: a[0], Off: a[1]}, StopBlocks: policy.Limit{On: a[2], Off: a[3]},
		SlowReadyBatches: policy.Limit{On: a[4], Off: a[5]}, StopReadyBatches: policy.Limit{On: a[6], Off: a[7]},
	}
}

func recordWindows(ws []policy.Window) []windowRec {
	var out []windowRec
	for _, w := range ws {
		out = append(out, windowRec{Days: uint8(w.Days), Start: w.Start, End: w.End, Offset: w.Offset})
	}
	return out
}

func windowsOf(rs []windowRec) []policy.Window {
	var out []policy.Window
	for _, w := range rs {
		out = append(out, policy.Window{Days: policy.Weekdays(w.Days), Start: w.Start, End: w.End, Offset: w.Offset})
	}
	return out
}

func (r *policyRec) policy() policy.Tenant {
	p := policy.Tenant{
		Class: policy.Class(r.Class), MaxInProgress: r.MaxInProgress, MaxInProgressPerShard: r.MaxPerShard, NotBefore: r.NotBefore,
		Run:           policy.RunPolicy{Mode: policy.RunMode(r.Mode)},
		Pressure:      thresholdsOf(r.Pressure),
		ShardPressure: thresholdsOf(r.ShardPressure),
		StaleAfter:    time.Duration(r.StaleAfter),
	}
	p.Run.Windows = windowsOf(r.Windows)
	for _, l := range r.Levels {
		p.Levels = append(p.Levels, policy.Level{Level: l.Level, MaxBlocks: l.MaxBlocks, MaxBytes: l.MaxBytes, MaxAge: time.Duration(l.MaxAge), CrossShard: policy.Toggle(l.CrossShard)})
	}
	for _, lr := range r.Runs {
		p.LevelRuns = append(p.LevelRuns, policy.LevelRun{Level: lr.Level, Run: policy.RunPolicy{Mode: policy.RunMode(lr.Mode), Windows: windowsOf(lr.Windows)}})
	}
	return p
}

// policyCommandRec is the encoding of a PolicyCommand: an array of six
// items.
type policyCommandRec struct {
	_      struct{} `cbor:",toarray"`
	Action PolicyAction
	Tenant string
	All    bool
	Level  *uint32
	Policy *policyRec
	By     string
}

// recordPolicyCommand returns the record of p, nil for nil.
func recordPolicyCommand(p *PolicyCommand) *policyCommandRec {
	if p == nil {
		return nil
	}
	r := &policyCommandRec{Action: p.Action, Tenant: p.Tenant, All: p.All, Level: p.Level, By: p.By}
	if p.Policy != nil {
		rec := recordPolicy(p.Policy)
		r.Policy = &rec
	}
	return r
}

// command returns the policy command r records, nil for nil.
func (r *policyCommandRec) command() *PolicyCommand {
	if r == nil {
		return nil
	}
	p := &PolicyCommand{Action: r.Action, Tenant: r.Tenant, All: r.All, Level: r.Level, By: r.By}
	if r.Policy != nil {
		pol := r.Policy.policy()
		p.Policy = &pol
	}
	return p
}

// compareForce orders compact-now requests by scope: every tenant first,
// then by tenant; every level first, then by level.
func compareForce(a, b planner.Force) int {
	if c := cmpBool(a.AllTenants, b.AllTenants); c != 0 {
		return c
	}
	if c := strings.Compare(a.Tenant, b.Tenant); c != 0 {
		return c
	}
	if c := cmpBool(a.AllLevels, b.AllLevels); c != 0 {
		return c
	}
	return cmp.Compare(a.Level, b.Level)
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

// tenantShard names a shard of a tenant.
type tenantShard struct {
	tenant string
	shard  uint32
}

func compareTenantShard(a, b tenantShard) int {
	if c := strings.Compare(a.tenant, b.tenant); c != 0 {
		return c
	}
	return cmp.Compare(a.shard, b.shard)
}

// policies is the replicated policy state: the default policy, the
// tenants' own, the compact-now requests in force and the backpressure
// grades (the grades' memory: hysteresis needs the previous grade).
// Maps are for lookups only; every iteration that decides anything goes
// through the sorted names.
type policies struct {
	def     policy.Tenant
	tenants map[string]policy.Tenant
	names   []string // tenants with a policy of their own, sorted
	compact []planner.Force
	// grades holds the tenants whose grade is not OK, shardGrades the
	// shards (policy.Tenant.ShardPressure).
	grades      map[string]policy.Grade
	shardGrades map[tenantShard]policy.Grade
	// open says whether new jobs may start under the default policy and
	// under each tenant's own, as judged at edge (the log time up to
	// which the judgement holds: the next window edge or not-before);
	// closedLv, at which levels their level windows hold new jobs (bit l
	// for level l). Only tenants closed, or with closed levels, have
	// entries.
	defOpen     bool
	open        map[string]bool
	defClosedLv uint64
	closedLv    map[string]uint64
	edge        int64
}

func newPolicies() *policies {
	return &policies{tenants: map[string]policy.Tenant{}, grades: map[string]policy.Grade{}, shardGrades: map[tenantShard]policy.Grade{},
		defOpen: true, open: map[string]bool{},
		closedLv: map[string]uint64{}, edge: math.MaxInt64}
}

// of returns the effective policy of a tenant.
func (ps *policies) of(tenant string) policy.Tenant {
	if p, ok := ps.tenants[tenant]; ok {
		return p
	}
	return ps.def
}

// configured reports whether any policy differs from the zero policy.
func (ps *policies) configured() bool {
	return len(ps.names) > 0 || !ps.def.Equal(policy.Tenant{}) || len(ps.compact) > 0 || len(ps.grades) > 0 || len(ps.shardGrades) > 0
}

func (ps *policies) set(tenant string, p policy.Tenant) error {
	if _, ok := ps.tenants[tenant]; !ok {
		if len(ps.names) >= MaxPolicyTenants {
			return fmt.Errorf("%w: %d tenants have a policy, at most %d", ErrOperator, len(ps.names), MaxPolicyTenants)
		}
		i, _ := slices.BinarySearch(ps.names, tenant)
		ps.names = slices.Insert(ps.names, i, tenant)
	}
	p = p.Clone() // the command's slices are not ours
	ps.tenants[tenant] = p
	return nil
}

func (ps *policies) clear(tenant string) bool {
	if _, ok := ps.tenants[tenant]; !ok {
		return false
	}
	delete(ps.tenants, tenant)
	delete(ps.open, tenant)
	delete(ps.closedLv, tenant)
	// Its grades stay: the default's thresholds grade them at the next
	// regrade (follow does it at once).
	i, _ := slices.BinarySearch(ps.names, tenant)
	ps.names = slices.Delete(ps.names, i, i+1)
	return true
}

// addCompact records a compact-now request, replacing one of the same
// scope.
func (ps *policies) addCompact(c planner.Force) error {
	i, found := slices.BinarySearchFunc(ps.compact, c, compareForce)
	if found {
		ps.compact[i].Before = max(ps.compact[i].Before, c.Before)
		return nil
	}
	if len(ps.compact) >= MaxCompactNow {
		return fmt.Errorf("%w: %d compact-now requests in force, at most %d", ErrOperator, len(ps.compact), MaxCompactNow)
	}
	ps.compact = slices.Insert(ps.compact, i, c)
	return nil
}

// judge re-evaluates, at log time now, whether each policy lets new jobs
// start, and returns the tenants whose judgement changed (all: the
// default's changed, which concerns every tenant without its own).
func (ps *policies) judge(now int64) (changed []string, all bool) {
	ps.edge = math.MaxInt64
	open, closedLv := ps.def.MayStart(now), policy.ClosedLevels(ps.def.LevelRuns, now)
	if open != ps.defOpen || closedLv != ps.defClosedLv {
		ps.defOpen, ps.defClosedLv, all = open, closedLv, true
	}
	ps.edge = min(ps.edge, ps.def.NextChange(now))
	for _, name := range ps.names {
		p := ps.tenants[name]
		open, closedLv := p.MayStart(now), policy.ClosedLevels(p.LevelRuns, now)
		prev, ok := ps.open[name]
		if !ok {
			prev = true
		}
		if open != prev || closedLv != ps.closedLv[name] {
			changed = append(changed, name)
		}
		if open {
			delete(ps.open, name)
		} else {
			ps.open[name] = false
		}
		if closedLv == 0 {
			delete(ps.closedLv, name)
		} else {
			ps.closedLv[name] = closedLv
		}
		ps.edge = min(ps.edge, p.NextChange(now))
	}
	return changed, all
}

// closedLevels returns the levels at which the tenant's level windows
// hold its new jobs, as last judged (bit l for level l).
func (ps *policies) closedLevels(tenant string) uint64 {
	if _, own := ps.tenants[tenant]; own {
		return ps.closedLv[tenant]
	}
	return ps.defClosedLv
}

// mayStart reports whether the tenant's new jobs may start, as last
// judged (its level windows aside: see closedLevels).
func (ps *policies) mayStart(tenant string) bool {
	if _, own := ps.tenants[tenant]; own {
		_, closed := ps.open[tenant]
		return !closed
	}
	return ps.defOpen
}

// policiesPerFrame bounds the records of one policy frame.
const policiesPerFrame = 256

// writeFrames writes the tenants' policies, the compact-now requests and
// the grades, in frames, each list in its canonical order.
func (ps *policies) writeFrames(sw *codec.Writer) error {
	var tenants []tenantPolicyRec
	for _, name := range ps.names {
		p := ps.tenants[name]
		tenants = append(tenants, tenantPolicyRec{Tenant: name, Policy: recordPolicy(&p)})
	}
	if err := encodeFrames(sw, tenants); err != nil {
		return err
	}
	compact := make([]compactRec, len(ps.compact))
	for i, c := range ps.compact {
		compact[i] = compactRec{Tenant: c.Tenant, All: c.AllTenants, Level: c.Level, AllLevels: c.AllLevels, Before: c.Before}
	}
	if err := encodeFrames(sw, compact); err != nil {
		return err
	}
	if err := encodeFrames(sw, ps.gradeList()); err != nil {
		return err
	}
	return encodeFrames(sw, ps.shardGradeList())
}

// shardGradeList returns the shard grades that are not OK, by tenant and
// shard.
func (ps *policies) shardGradeList() []shardGradeRec {
	keys := make([]tenantShard, 0, len(ps.shardGrades))
	for k := range ps.shardGrades {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareTenantShard)
	out := make([]shardGradeRec, len(keys))
	for i, k := range keys {
		out[i] = shardGradeRec{Tenant: k.tenant, Shard: k.shard, Grade: uint8(ps.shardGrades[k])}
	}
	return out
}

// shardsGraded returns the shards of a tenant whose grade is not OK, in
// order.
func (ps *policies) shardsGraded(tenant string) []uint32 {
	var out []uint32
	for k := range ps.shardGrades {
		if k.tenant == tenant {
			out = append(out, k.shard)
		}
	}
	slices.Sort(out)
	return out
}

// gradeList returns the grades that are not OK, by tenant.
func (ps *policies) gradeList() []gradeRec {
	names := make([]string, 0, len(ps.grades))
	for name := range ps.grades {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]gradeRec, len(names))
	for i, name := range names {
		out[i] = gradeRec{Tenant: name, Grade: uint8(ps.grades[name])}
	}
	return out
}

func encodeFrames[T any](sw *codec.Writer, recs []T) error {
	for len(recs) > 0 {
		n := min(len(recs), policiesPerFrame)
		if err := sw.Encode(recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// decodeFrames reads frames of records until n are read, checking each.
func decodeFrames[T any](sr *codec.Reader, what string, n int, check func(*T) error) error {
	if n < 0 {
		return fmt.Errorf("%s: %d records: %w", what, n, ck.ErrMalformed)
	}
	for read := 0; read < n; {
		var recs []T
		if err := sr.Decode(&recs); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if len(recs) == 0 || len(recs) > policiesPerFrame || read+len(recs) > n {
			return fmt.Errorf("%s: frame of %d records: %w", what, len(recs), ck.ErrMalformed)
		}
		for i := range recs {
			if err := check(&recs[i]); err != nil {
				return fmt.Errorf("%s: %w: %w", what, ck.ErrMalformed, err)
			}
		}
		read += len(recs)
	}
	return nil
}

// readFrames reads what writeFrames wrote, refusing anything it would not
// have written: invalid policies, unsorted or repeated names, OK grades.
func (ps *policies) readFrames(sr *codec.Reader, h *snapshotPolicies) error {
	ps.def = h.Default.policy()
	if err := checkPolicy(&ps.def); err != nil {
		return fmt.Errorf("default: %w: %w", ck.ErrMalformed, err)
	}
	if h.Tenants > MaxPolicyTenants || h.Compact > MaxCompactNow {
		return fmt.Errorf("%d tenant policies, %d compact-now requests: %w", h.Tenants, h.Compact, ck.ErrMalformed)
	}
	err := decodeFrames(sr, "tenants", h.Tenants, func(r *tenantPolicyRec) error {
		if err := ident.ValidateTenant(r.Tenant); err != nil {
			return err
		}
		if n := len(ps.names); n > 0 && r.Tenant <= ps.names[n-1] {
			return fmt.Errorf("tenant %q out of order", r.Tenant)
		}
		p := r.Policy.policy()
		if err := checkPolicy(&p); err != nil {
			return err
		}
		ps.names = append(ps.names, r.Tenant)
		ps.tenants[r.Tenant] = p
		return nil
	})
	if err != nil {
		return err
	}
	err = decodeFrames(sr, "compact now", h.Compact, func(r *compactRec) error {
		c := planner.Force{Tenant: r.Tenant, AllTenants: r.All, Level: r.Level, AllLevels: r.AllLevels, Before: r.Before}
		if err := c.Validate(); err != nil {
			return err
		}
		if (c.AllLevels && c.Level != 0) || c.Before < 0 {
			return fmt.Errorf("compact-now request %+v", *r)
		}
		if n := len(ps.compact); n > 0 && compareForce(ps.compact[n-1], c) >= 0 {
			return fmt.Errorf("compact-now request %+v out of order", *r)
		}
		ps.compact = append(ps.compact, c)
		return nil
	})
	if err != nil {
		return err
	}
	prev, first := "", true
	err = decodeFrames(sr, "grades", h.Grades, func(r *gradeRec) error {
		if err := ident.ValidateTenant(r.Tenant); err != nil {
			return err
		}
		g := policy.Grade(r.Grade)
		if (!first && r.Tenant <= prev) || g == policy.OK || g > policy.Stop {
			return fmt.Errorf("grade %d of %q", r.Grade, r.Tenant)
		}
		prev, first = r.Tenant, false
		ps.grades[r.Tenant] = g
		return nil
	})
	if err != nil {
		return err
	}
	var prevShard tenantShard
	first = true
	return decodeFrames(sr, "shard grades", h.ShardGrades, func(r *shardGradeRec) error {
		if err := ident.ValidateTenant(r.Tenant); err != nil {
			return err
		}
		k, g := tenantShard{tenant: r.Tenant, shard: r.Shard}, policy.Grade(r.Grade)
		if (!first && compareTenantShard(prevShard, k) >= 0) || g == policy.OK || g > policy.Stop {
			return fmt.Errorf("grade %d of %q shard %d", r.Grade, r.Tenant, r.Shard)
		}
		prevShard, first = k, false
		ps.shardGrades[k] = g
		return nil
	})
}
