package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

// Policy is a tenant's scheduling policy (policy.Tenant) as the API shows
// and takes it: names, not codes. An absent field takes the zero policy's
// value (no cap, no window, no threshold, no alarm); [Policy.Tenant]
// converts it, [PolicyOf] is its inverse.
type Policy struct {
	// Class is "high", "medium" or "low" (empty: medium).
	Class string `json:"class,omitempty"`
	// MaxInProgress caps the tenant's jobs in progress at once; 0 means
	// no cap.
	MaxInProgress uint32 `json:"max_in_progress"`
	// MaxInProgressPerShard caps the tenant's jobs in progress on each
	// shard at once; 0 (or absent) means no cap.
	MaxInProgressPerShard uint32 `json:"max_in_progress_per_shard,omitempty"`
	// Run says when new jobs may start (absent: at any time).
	Run *RunPolicy `json:"run,omitempty"`
	// NotBefore holds new jobs until this time, RFC 3339 (absent: none).
	NotBefore string `json:"not_before,omitempty"`
	// Pressure grades the tenant's backlog for its ingest (absent: always
	// ok).
	Pressure *Thresholds `json:"pressure,omitempty"`
	// ShardPressure grades each shard of the tenant apart, from that
	// shard's queue (absent: shards are not graded).
	ShardPressure *Thresholds `json:"shard_pressure,omitempty"`
	// StaleAfter raises a staleness alarm for a level whose oldest queued
	// block has waited longer: a Go duration ("1h30m"; absent: no alarm).
	StaleAfter string `json:"stale_after,omitempty"`
	// Levels overrides the cluster's batching of some levels for the
	// tenant (absent: the cluster's batching at every level).
	Levels []LevelOverride `json:"levels,omitempty"`
	// LevelRuns gives some levels run windows of their own, on top of Run
	// (absent: none).
	LevelRuns []LevelRun `json:"level_runs,omitempty"`
}

// LevelRun is a level's run windows (policy.LevelRun): the tenant's new
// jobs at Level start only when both Run and the tenant's run policy let
// them.
type LevelRun struct {
	Level uint32    `json:"level"`
	Run   RunPolicy `json:"run"`
}

// LevelOverride overrides one level's batching for a tenant
// (policy.Level): absent or zero fields keep the cluster's value.
type LevelOverride struct {
	Level uint32 `json:"level"`
	// MaxBlocks and MaxBytes bound a job's sources.
	MaxBlocks int   `json:"max_blocks,omitempty"`
	MaxBytes  int64 `json:"max_bytes,omitempty"`
	// MaxAge is how long a partial batch waits before it is planned: a Go
	// duration ("30s").
	MaxAge string `json:"max_age,omitempty"`
	// CrossShard is "on" or "off" (absent: the cluster's).
	CrossShard string `json:"cross_shard,omitempty"`
}

// RunPolicy is policy.RunPolicy: new jobs start only inside the windows
// (mode "only-in") or never inside them ("never-in").
type RunPolicy struct {
	Mode    string   `json:"mode"`
	Windows []Window `json:"windows"`
}

// Window is a recurring weekly window (policy.Window): on each of Days
// ("Sun" to "Sat") from Start to End ("HH:MM", End up to "24:00"; an End
// before Start wraps past midnight), in UTC shifted by OffsetMinutes.
type Window struct {
	Days          []string `json:"days"`
	Start         string   `json:"start"`
	End           string   `json:"end"`
	OffsetMinutes int      `json:"offset_minutes"`
}

// Thresholds are the backpressure thresholds (policy.Thresholds): absent
// limits are off. The blocks limits count queued blocks, the ready-batch
// limits the jobs that could be planned now (the compaction debt in ready
// batches). The former keys slow_debt and stop_debt are refused with an
// error that names their successors.
type Thresholds struct {
	SlowBlocks       *Limit `json:"slow_blocks,omitempty"`
	StopBlocks       *Limit `json:"stop_blocks,omitempty"`
	SlowReadyBatches *Limit `json:"slow_ready_batches,omitempty"`
	StopReadyBatches *Limit `json:"stop_ready_batches,omitempty"`
}

// renamedKeys maps the thresholds' former JSON keys to their names now.
var renamedKeys = [...]struct{ old, now string }{{"slow_debt", "slow_ready_batches"}, {"stop_debt", "stop_ready_batches"}}

// UnmarshalJSON decodes thresholds with known keys only. A former key is
// refused with an error that names the key to use.
func (th *Thresholds) UnmarshalJSON(data []byte) error {
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) == nil {
		for _, k := range renamedKeys {
			if _, ok := keys[k.old]; ok {
				return fmt.Errorf("thresholds: %q is now %q (the debt thresholds count ready batches: jobs that could be planned now)", k.old, k.now)
			}
		}
	}
	type plain Thresholds
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode((*plain)(th))
}

// Limit is a threshold with hysteresis (policy.Limit): a grade is entered
// at On and left below Off.
type Limit struct {
	On  int64 `json:"on"`
	Off int64 `json:"off"`
}

// String writes the override as compactctl's -level flag takes it:
// "0:blocks=40,age=2m0s".
func (o LevelOverride) String() string {
	var kv []string
	if o.MaxBlocks != 0 {
		kv = append(kv, "blocks="+strconv.Itoa(o.MaxBlocks))
	}
	if o.MaxBytes != 0 {
		kv = append(kv, "bytes="+strconv.FormatInt(o.MaxBytes, 10))
	}
	if o.MaxAge != "" {
		kv = append(kv, "age="+o.MaxAge)
	}
	if o.CrossShard != "" {
		kv = append(kv, "cross="+o.CrossShard)
	}
	return fmt.Sprintf("%d:%s", o.Level, strings.Join(kv, ","))
}

// ParseLevelOverride parses a level override in the form String writes,
// "L:blocks=N,bytes=N,age=DURATION,cross=on|off", with at least one of the
// settings. It checks the form only: [Policy.Tenant] checks the duration
// and the cross-shard value, and the state machine the rest.
func ParseLevelOverride(s string) (LevelOverride, error) {
	var o LevelOverride
	l, settings, ok := strings.Cut(s, ":")
	level, err := strconv.ParseUint(l, 10, 32)
	if !ok || err != nil || settings == "" {
		return o, fmt.Errorf("%q: want L:blocks=N,bytes=N,age=DURATION,cross=on|off", s)
	}
	o.Level = uint32(level)
	for _, kv := range strings.Split(settings, ",") {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "blocks":
			o.MaxBlocks, err = strconv.Atoi(v)
		case "bytes":
			o.MaxBytes, err = strconv.ParseInt(v, 10, 64)
		case "age":
			o.MaxAge = v
		case "cross":
			o.CrossShard = v
		default:
			err = errors.New("unknown setting")
		}
		if err != nil {
			return o, fmt.Errorf("%q: %q: want blocks=N, bytes=N, age=DURATION or cross=on|off", s, kv)
		}
	}
	return o, nil
}

// levelsText writes a policy's overrides, space-separated, or "".
func levelsText(levels []LevelOverride) string {
	out := make([]string, len(levels))
	for i, o := range levels {
		out[i] = o.String()
	}
	return strings.Join(out, " ")
}

// thresholdsOf returns th as the API shows it: nil for none.
func thresholdsOf(th policy.Thresholds) *Thresholds {
	if th == (policy.Thresholds{}) {
		return nil
	}
	lim := func(l policy.Limit) *Limit {
		if l == (policy.Limit{}) {
			return nil
		}
		return &Limit{On: l.On, Off: l.Off}
	}
	return &Thresholds{SlowBlocks: lim(th.SlowBlocks), StopBlocks: lim(th.StopBlocks), SlowReadyBatches: lim(th.SlowReadyBatches), StopReadyBatches: lim(th.StopReadyBatches)}
}

// policy converts the thresholds; nil is none.
func (th *Thresholds) policy() policy.Thresholds {
	if th == nil {
		return policy.Thresholds{}
	}
	lim := func(l *Limit) policy.Limit {
		if l == nil {
			return policy.Limit{}
		}
		return policy.Limit{On: l.On, Off: l.Off}
	}
	return policy.Thresholds{SlowBlocks: lim(th.SlowBlocks), StopBlocks: lim(th.StopBlocks), SlowReadyBatches: lim(th.SlowReadyBatches), StopReadyBatches: lim(th.StopReadyBatches)}
}

// String writes the limits set as compactctl's flags take them: "slow
// 100/80, stop 500/400, slow-ready-batches 10/5, stop-ready-batches 20/20".
func (th *Thresholds) String() string {
	if th == nil {
		return ""
	}
	var ls []string
	for _, l := range []struct {
		name string
		l    *Limit
	}{{"slow", th.SlowBlocks}, {"stop", th.StopBlocks}, {"slow-ready-batches", th.SlowReadyBatches}, {"stop-ready-batches", th.StopReadyBatches}} {
		if l.l != nil {
			ls = append(ls, fmt.Sprintf("%s %d/%d", l.name, l.l.On, l.l.Off))
		}
	}
	return strings.Join(ls, ", ")
}

// PressureText describes the policy's backpressure thresholds, as the
// status page and compactctl show them: the tenant's (see
// [Thresholds.String]), then each shard's after "per shard:", or "".
func (p Policy) PressureText() string {
	var parts []string
	if s := p.Pressure.String(); s != "" {
		parts = append(parts, s)
	}
	if s := p.ShardPressure.String(); s != "" {
		parts = append(parts, "per shard: "+s)
	}
	return strings.Join(parts, " · ")
}

// CapText says the policy's caps of jobs in progress in words: "2",
// "1 per shard", "4 · 1 per shard" or "none".
func (p Policy) CapText() string {
	var parts []string
	if p.MaxInProgress > 0 {
		parts = append(parts, strconv.FormatUint(uint64(p.MaxInProgress), 10))
	}
	if p.MaxInProgressPerShard > 0 {
		parts = append(parts, strconv.FormatUint(uint64(p.MaxInProgressPerShard), 10)+" per shard")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " · ")
}

// PolicyOf returns p as the API shows it.
func PolicyOf(p policy.Tenant) Policy {
	out := Policy{Class: p.Class.String(), MaxInProgress: p.MaxInProgress, MaxInProgressPerShard: p.MaxInProgressPerShard}
	if p.Run.Mode != policy.NeverIn || len(p.Run.Windows) > 0 {
		run := runPolicyOf(p.Run)
		out.Run = &run
	}
	for _, lr := range p.LevelRuns {
		out.LevelRuns = append(out.LevelRuns, LevelRun{Level: lr.Level, Run: runPolicyOf(lr.Run)})
	}
	if p.NotBefore != 0 {
		out.NotBefore = logTime(p.NotBefore)
	}
	out.Pressure = thresholdsOf(p.Pressure)
	out.ShardPressure = thresholdsOf(p.ShardPressure)
	if p.StaleAfter != 0 {
		out.StaleAfter = p.StaleAfter.String()
	}
	for _, l := range p.Levels {
		o := LevelOverride{Level: l.Level, MaxBlocks: l.MaxBlocks, MaxBytes: l.MaxBytes}
		if l.MaxAge != 0 {
			o.MaxAge = l.MaxAge.String()
		}
		if l.CrossShard != policy.Inherit {
			o.CrossShard = l.CrossShard.String()
		}
		out.Levels = append(out.Levels, o)
	}
	return out
}

// RunText describes when the policy lets new jobs start, as the status
// page and compactctl show it: "any time", or the run policy's mode and
// windows ("only-in Mon,Tue 22:00-06:00 UTC+01:00"), followed by each
// level's ("level 1 never-in ..."), separated by " · ".
func (p Policy) RunText() string {
	var parts []string
	if p.Run != nil {
		parts = append(parts, p.Run.text())
	}
	for _, lr := range p.LevelRuns {
		parts = append(parts, fmt.Sprintf("level %d %s", lr.Level, lr.Run.text()))
	}
	if len(parts) == 0 {
		return "any time"
	}
	return strings.Join(parts, " · ")
}

// text writes the mode and the windows.
func (r *RunPolicy) text() string {
	var ws []string
	for _, w := range r.Windows {
		if pw, err := w.window(); err == nil {
			ws = append(ws, pw.String())
		}
	}
	return r.Mode + " " + strings.Join(ws, "; ")
}

// runPolicyOf returns r as the API shows it.
func runPolicyOf(r policy.RunPolicy) RunPolicy {
	out := RunPolicy{Mode: r.Mode.String(), Windows: []Window{}}
	for _, w := range r.Windows {
		out.Windows = append(out.Windows, Window{Days: dayNames(w.Days), Start: clock(w.Start), End: clock(w.End), OffsetMinutes: int(w.Offset)})
	}
	return out
}

// policy converts the run policy; its errors wrap policy.ErrInvalid.
func (r *RunPolicy) policy() (policy.RunPolicy, error) {
	var out policy.RunPolicy
	switch r.Mode {
	case policy.OnlyIn.String():
		out.Mode = policy.OnlyIn
	case policy.NeverIn.String():
		out.Mode = policy.NeverIn
	default:
		return out, fmt.Errorf("mode %q, want only-in or never-in: %w", r.Mode, policy.ErrInvalid)
	}
	if len(r.Windows) > policy.MaxWindows {
		return out, fmt.Errorf("%d windows, at most %d: %w", len(r.Windows), policy.MaxWindows, policy.ErrInvalid)
	}
	for i, w := range r.Windows {
		pw, err := w.window()
		if err != nil {
			return out, fmt.Errorf("window %d: %w", i+1, err)
		}
		out.Windows = append(out.Windows, pw)
	}
	return out, nil
}

// Tenant converts p to a policy.Tenant. Its errors wrap policy.ErrInvalid
// and say which field is wrong. It checks what the JSON can get wrong (a
// name, a time of day, a duration); the policy's own rules — a window
// that never opens, Off above On — are policy.Tenant.Validate's, which the
// leader applies before proposing.
func (p Policy) Tenant() (policy.Tenant, error) {
	var out policy.Tenant
	if p.Class != "" {
		c, err := policy.ParseClass(p.Class)
		if err != nil {
			return out, fmt.Errorf("class: %w", err)
		}
		out.Class = c
	}
	out.MaxInProgress = p.MaxInProgress
	out.MaxInProgressPerShard = p.MaxInProgressPerShard
	if p.Run != nil {
		run, err := p.Run.policy()
		if err != nil {
			return out, fmt.Errorf("run: %w", err)
		}
		out.Run = run
	}
	if len(p.LevelRuns) > policy.MaxLevelOverrides {
		return out, fmt.Errorf("level_runs: %d, at most %d: %w", len(p.LevelRuns), policy.MaxLevelOverrides, policy.ErrInvalid)
	}
	for _, lr := range p.LevelRuns {
		run, err := lr.Run.policy()
		if err != nil {
			return out, fmt.Errorf("level_runs: level %d: run: %w", lr.Level, err)
		}
		out.LevelRuns = append(out.LevelRuns, policy.LevelRun{Level: lr.Level, Run: run})
	}
	if p.NotBefore != "" {
		t, err := time.Parse(time.RFC3339Nano, p.NotBefore)
		if err != nil {
			return out, fmt.Errorf("not_before %q: want an RFC 3339 time: %w", p.NotBefore, policy.ErrInvalid)
		}
		if t.Before(time.Unix(0, 0)) || t.After(time.Unix(0, math.MaxInt64)) {
			return out, fmt.Errorf("not_before %q: want a time from 1970 to 2262: %w", p.NotBefore, policy.ErrInvalid)
		}
		out.NotBefore = t.UnixNano()
	}
	out.Pressure = p.Pressure.policy()
	out.ShardPressure = p.ShardPressure.policy()
	if p.StaleAfter != "" {
		d, err := time.ParseDuration(p.StaleAfter)
		if err != nil {
			return out, fmt.Errorf("stale_after %q: want a duration such as 1h30m: %w", p.StaleAfter, policy.ErrInvalid)
		}
		out.StaleAfter = d
	}
	if len(p.Levels) > policy.MaxLevelOverrides {
		return out, fmt.Errorf("levels: %d overrides, at most %d: %w", len(p.Levels), policy.MaxLevelOverrides, policy.ErrInvalid)
	}
	for _, o := range p.Levels {
		l := policy.Level{Level: o.Level, MaxBlocks: o.MaxBlocks, MaxBytes: o.MaxBytes}
		if o.MaxAge != "" {
			d, err := time.ParseDuration(o.MaxAge)
			if err != nil {
				return out, fmt.Errorf("levels: level %d: max_age %q: want a duration such as 30s: %w", o.Level, o.MaxAge, policy.ErrInvalid)
			}
			l.MaxAge = d
		}
		switch o.CrossShard {
		case "":
		case policy.On.String():
			l.CrossShard = policy.On
		case policy.Off.String():
			l.CrossShard = policy.Off
		default:
			return out, fmt.Errorf("levels: level %d: cross_shard %q, want on or off: %w", o.Level, o.CrossShard, policy.ErrInvalid)
		}
		out.Levels = append(out.Levels, l)
	}
	return out, nil
}

func (w Window) window() (policy.Window, error) {
	var out policy.Window
	if len(w.Days) == 0 {
		return out, fmt.Errorf("days: none, want some of Sun, Mon, Tue, Wed, Thu, Fri, Sat: %w", policy.ErrInvalid)
	}
	for _, name := range w.Days {
		d, ok := parseDay(name)
		if !ok {
			return out, fmt.Errorf("day %q, want Sun, Mon, Tue, Wed, Thu, Fri or Sat: %w", name, policy.ErrInvalid)
		}
		out.Days |= 1 << uint(d)
	}
	var err error
	if out.Start, err = parseClock(w.Start, false); err != nil {
		return out, fmt.Errorf("start: %w", err)
	}
	if out.End, err = parseClock(w.End, true); err != nil {
		return out, fmt.Errorf("end: %w", err)
	}
	if w.OffsetMinutes < -policy.MaxOffset || w.OffsetMinutes > policy.MaxOffset {
		return out, fmt.Errorf("offset_minutes %d, at most %d either way: %w", w.OffsetMinutes, policy.MaxOffset, policy.ErrInvalid)
	}
	out.Offset = int16(w.OffsetMinutes)
	return out, nil
}

// parseDay parses a day's name: "Mon" or "Monday", in any case.
func parseDay(s string) (time.Weekday, bool) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.EqualFold(s, d.String()[:3]) || strings.EqualFold(s, d.String()) {
			return d, true
		}
	}
	return 0, false
}

func dayNames(w policy.Weekdays) []string {
	out := []string{}
	for d := time.Sunday; d <= time.Saturday; d++ {
		if w.Has(d) {
			out = append(out, d.String()[:3])
		}
	}
	return out
}

// parseClock parses "HH:MM" as minutes of the day; "24:00" only as an end.
func parseClock(s string, end bool) (uint16, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.ParseUint(h, 10, 8)
	mm, err2 := strconv.ParseUint(m, 10, 8)
	switch {
	case !ok || len(h) != 2 || len(m) != 2 || err1 != nil || err2 != nil || hh > 24 || mm > 59:
		return 0, fmt.Errorf("%q, want HH:MM: %w", s, policy.ErrInvalid)
	case hh == 24 && (mm != 0 || !end):
		return 0, fmt.Errorf("%q: 24:00 is only an end: %w", s, policy.ErrInvalid)
	}
	return uint16(hh*60 + mm), nil
}

func clock(m uint16) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// Policies is the answer of GET api/policies: the default policy, the
// tenants' own and the compact-now requests in force. With ?limit=N it is
// one page of at most N tenants' own policies, by tenant name, after
// ?cursor= (a Next of an earlier page); every page carries the default and
// the compact-now requests.
type Policies struct {
	// LogTime is the log time at which Open is judged.
	LogTime string         `json:"log_time"`
	Default TenantPolicy   `json:"default"`
	Tenants []TenantPolicy `json:"tenants"`
	// CompactNow lists the compact-now requests still in force.
	CompactNow []CompactNow `json:"compact_now"`
	// Next is the cursor of the next page of tenants: absent on the last.
	Next string `json:"next,omitempty"`
}

// maxPolicyPage bounds the limit of a page of GET api/policies.
const maxPolicyPage = 10000

// TenantPolicy is a tenant's own policy (or the default, with no tenant)
// and whether it lets the tenant's new jobs start at the log's time (its
// run window and not-before time).
type TenantPolicy struct {
	Tenant string `json:"tenant"`
	Open   bool   `json:"open"`
	Policy Policy `json:"policy"`
}

// CompactNow is a compact-now request in force: the blocks of Tenant
// (every tenant with All) at Level (every level when absent) queued up to
// Before are planned without waiting for their batches to fill or age.
type CompactNow struct {
	Tenant string  `json:"tenant"`
	All    bool    `json:"all,omitempty"`
	Level  *uint32 `json:"level,omitempty"`
	Before string  `json:"before"`
}

func (h *Handler) policiesOf(r *http.Request) (*Policies, error) {
	q := r.URL.Query()
	limit, err := queryInt(q, "limit", maxPolicyPage)
	if err != nil {
		return nil, err
	}
	after, paged := "", q.Has("cursor")
	if paged {
		// A cursor is the last tenant of a page, quoted: the empty
		// tenant is a tenant too.
		if after, err = strconv.Unquote(q.Get("cursor")); err != nil {
			return nil, badf("cursor %q is not one this API returned", q.Get("cursor"))
		}
	}
	f, err := h.svc.Read(r.Context())
	if err != nil {
		return nil, err
	}
	ps := f.Policies()
	tenants := ps.Tenants // by tenant name
	if paged {
		i, found := slices.BinarySearchFunc(tenants, after, func(t raftfsm.TenantPolicy, name string) int { return strings.Compare(t.Tenant, name) })
		if found {
			i++
		}
		tenants = tenants[i:]
	}
	next := ""
	if limit > 0 && len(tenants) > limit {
		tenants = tenants[:limit]
		next = strconv.Quote(tenants[limit-1].Tenant)
	}
	_, _, now := h.svc.FSM().LastApplied()
	out := &Policies{
		LogTime:    logTime(now),
		Default:    TenantPolicy{Open: ps.Default.MayStart(now), Policy: PolicyOf(ps.Default)},
		Tenants:    []TenantPolicy{},
		CompactNow: []CompactNow{},
	}
	out.Next = next
	for _, t := range tenants {
		out.Tenants = append(out.Tenants, TenantPolicy{Tenant: t.Tenant, Open: t.Open, Policy: PolicyOf(t.Policy)})
	}
	for _, c := range ps.CompactNow {
		cn := CompactNow{Tenant: c.Tenant, All: c.AllTenants, Before: logTime(c.Before)}
		if !c.AllLevels {
			level := c.Level
			cn.Level = &level
		}
		out.CompactNow = append(out.CompactNow, cn)
	}
	return out, nil
}

func (h *Handler) policies(r *http.Request) (any, error) { return h.policiesOf(r) }

// PolicyCommand is the body of the policy commands: "policy-set"
// (Tenant or All, and Policy), "policy-clear" (Tenant or All) and
// "compact-now" (Tenant or All, and optionally Level). Tenant is a
// pointer because the empty tenant (multi-tenant segments) is a tenant:
// exactly one of Tenant and All is given.
type PolicyCommand struct {
	Tenant *string `json:"tenant,omitempty"`
	All    bool    `json:"all,omitempty"`
	Level  *uint32 `json:"level,omitempty"`
	Policy *Policy `json:"policy,omitempty"`
}

var policyActions = map[string]raftfsm.PolicyAction{
	"policy-set": raftfsm.PolicySet, "policy-clear": raftfsm.PolicyClear, "compact-now": raftfsm.PolicyCompactNow,
}

// policyCommand converts the body of a policy command; its errors are the
// caller's (400).
func policyCommand(name string, action raftfsm.PolicyAction, c *PolicyCommand) (raftfsm.PolicyCommand, error) {
	var out raftfsm.PolicyCommand
	if err := oneTenant(name, c.Tenant, c.All); err != nil {
		return out, err
	}
	out = raftfsm.PolicyCommand{Action: action, All: c.All, Level: c.Level}
	if c.Tenant != nil {
		out.Tenant = *c.Tenant
	}
	if c.Level != nil && action != raftfsm.PolicyCompactNow {
		return out, badf("%s: level is for compact-now only", name)
	}
	switch {
	case action == raftfsm.PolicySet && c.Policy == nil:
		return out, badf("%s: policy is required", name)
	case action != raftfsm.PolicySet && c.Policy != nil:
		return out, badf("%s: takes no policy", name)
	case c.Policy != nil:
		p, err := c.Policy.Tenant()
		if err != nil {
			return out, badRequest{fmt.Errorf("%s: policy: %w", name, err)}
		}
		out.Policy = &p
	}
	return out, nil
}

func (h *Handler) policyCommand(w http.ResponseWriter, r *http.Request, name string, action raftfsm.PolicyAction) {
	if !h.commandAllowed(w, r, name) {
		return
	}
	var c PolicyCommand
	if err := decodeBody(r, &c); err != nil {
		fail(w, err)
		return
	}
	cmd, err := policyCommand(name, action, &c)
	if err != nil {
		fail(w, err)
		return
	}
	if h.identity != nil {
		cmd.By = h.identity(r)
	}
	res, err := h.svc.Propose(r.Context(), &raftfsm.Command{Policy: &cmd})
	if err != nil {
		fail(w, err)
		return
	}
	h.log.Info("admin: command", "action", name, "by", cmd.By, "tenant", cmd.Tenant, "all", cmd.All, "from", r.RemoteAddr, "entry", res.Index)
	writeJSON(w, CommandResult{Action: name, Index: res.Index, Count: res.Count})
}
