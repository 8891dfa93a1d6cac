package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The JSON form of a policy (the admin API's): names rather than codes,
// times in RFC 3339, durations as Go writes them, windows' days by name
// and their minutes as "HH:MM". An absent field takes the zero policy's
// value. These types only carry the form; [Tenant.MarshalJSON] and
// [Tenant.UnmarshalJSON] convert it.
type (
	tenantJSON struct {
		Class                 string          `json:"class,omitempty"`
		MaxInProgress         uint32          `json:"max_in_progress"`
		MaxInProgressPerShard uint32          `json:"max_in_progress_per_shard,omitempty"`
		Run                   *runJSON        `json:"run,omitempty"`
		NotBefore             string          `json:"not_before,omitempty"`
		Pressure              *thresholdsJSON `json:"pressure,omitempty"`
		ShardPressure         *thresholdsJSON `json:"shard_pressure,omitempty"`
		StaleAfter            string          `json:"stale_after,omitempty"`
		Levels                []levelJSON     `json:"levels,omitempty"`
		LevelRuns             []levelRunJSON  `json:"level_runs,omitempty"`
	}
	levelRunJSON struct {
		Level uint32  `json:"level"`
		Run   runJSON `json:"run"`
	}
	levelJSON struct {
		Level      uint32 `json:"level"`
		MaxBlocks  int    `json:"max_blocks,omitempty"`
		MaxBytes   int64  `json:"max_bytes,omitempty"`
		MaxAge     string `json:"max_age,omitempty"`
		CrossShard string `json:"cross_shard,omitempty"`
	}
	runJSON struct {
		Mode    string       `json:"mode"`
		Windows []windowJSON `json:"windows"`
	}
	windowJSON struct {
		Days          []string `json:"days"`
		Start         string   `json:"start"`
		End           string   `json:"end"`
		OffsetMinutes int      `json:"offset_minutes"`
	}
	thresholdsJSON struct {
		SlowBlocks       *limitJSON `json:"slow_blocks,omitempty"`
		StopBlocks       *limitJSON `json:"stop_blocks,omitempty"`
		SlowReadyBatches *limitJSON `json:"slow_ready_batches,omitempty"`
		StopReadyBatches *limitJSON `json:"stop_ready_batches,omitempty"`
	}
	limitJSON struct {
		On  int64 `json:"on"`
		Off int64 `json:"off"`
	}
)

// MarshalJSON writes the policy in its JSON form: names, not codes
// ("class": "low", "run": {"mode": "only-in", "windows": [{"days":
// ["Mon"], "start": "22:00", "end": "06:00", "offset_minutes": 60}]}),
// times in RFC 3339, durations as Go writes them; docs/policies.md lists
// the fields. [Tenant.UnmarshalJSON] reads it back.
func (t Tenant) MarshalJSON() ([]byte, error) {
	out := tenantJSON{Class: t.Class.String(), MaxInProgress: t.MaxInProgress, MaxInProgressPerShard: t.MaxInProgressPerShard}
	if t.Run.Mode != NeverIn || len(t.Run.Windows) > 0 {
		run := runJSONOf(t.Run)
		out.Run = &run
	}
	for _, lr := range t.LevelRuns {
		out.LevelRuns = append(out.LevelRuns, levelRunJSON{Level: lr.Level, Run: runJSONOf(lr.Run)})
	}
	if t.NotBefore != 0 {
		out.NotBefore = time.Unix(0, t.NotBefore).UTC().Format(time.RFC3339Nano)
	}
	out.Pressure = thresholdsJSONOf(t.Pressure)
	out.ShardPressure = thresholdsJSONOf(t.ShardPressure)
	if t.StaleAfter != 0 {
		out.StaleAfter = t.StaleAfter.String()
	}
	for _, l := range t.Levels {
		o := levelJSON{Level: l.Level, MaxBlocks: l.MaxBlocks, MaxBytes: l.MaxBytes}
		if l.MaxAge != 0 {
			o.MaxAge = l.MaxAge.String()
		}
		if l.CrossShard != Inherit {
			o.CrossShard = l.CrossShard.String()
		}
		out.Levels = append(out.Levels, o)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the JSON form [Tenant.MarshalJSON] writes; unknown
// fields are refused. It checks what the JSON can get wrong (a name, a
// time of day, a duration) and says which field is wrong, with errors
// wrapping [ErrInvalid]; the policy's own rules (a window that never
// opens, Off above On) are [Tenant.Validate]'s. On error t is unchanged.
func (t *Tenant) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	var in tenantJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return err
	}
	p, err := in.tenant()
	if err != nil {
		return err
	}
	*t = p
	return nil
}

func (in *tenantJSON) tenant() (Tenant, error) {
	var out Tenant
	if in.Class != "" {
		c, err := parseClass(in.Class)
		if err != nil {
			return out, fmt.Errorf("class: %w", err)
		}
		out.Class = c
	}
	out.MaxInProgress = in.MaxInProgress
	out.MaxInProgressPerShard = in.MaxInProgressPerShard
	if in.Run != nil {
		run, err := in.Run.policy()
		if err != nil {
			return out, fmt.Errorf("run: %w", err)
		}
		out.Run = run
	}
	if len(in.LevelRuns) > maxLevelOverrides {
		return out, fmt.Errorf("level_runs: %d, at most %d: %w", len(in.LevelRuns), maxLevelOverrides, ErrInvalid)
	}
	for _, lr := range in.LevelRuns {
		run, err := lr.Run.policy()
		if err != nil {
			return out, fmt.Errorf("level_runs: level %d: run: %w", lr.Level, err)
		}
		out.LevelRuns = append(out.LevelRuns, LevelRun{Level: lr.Level, Run: run})
	}
	if in.NotBefore != "" {
		t, err := time.Parse(time.RFC3339Nano, in.NotBefore)
		if err != nil {
			return out, fmt.Errorf("not_before %q: want an RFC 3339 time: %w", in.NotBefore, ErrInvalid)
		}
		if t.Before(time.Unix(0, 0)) || t.After(time.Unix(0, math.MaxInt64)) {
			return out, fmt.Errorf("not_before %q: want a time from 1970 to 2262: %w", in.NotBefore, ErrInvalid)
		}
		out.NotBefore = t.UnixNano()
	}
	out.Pressure = in.Pressure.thresholds()
	out.ShardPressure = in.ShardPressure.thresholds()
	if in.StaleAfter != "" {
		d, err := time.ParseDuration(in.StaleAfter)
		if err != nil {
			return out, fmt.Errorf("stale_after %q: want a duration such as 1h30m: %w", in.StaleAfter, ErrInvalid)
		}
		out.StaleAfter = d
	}
	if len(in.Levels) > maxLevelOverrides {
		return out, fmt.Errorf("levels: %d overrides, at most %d: %w", len(in.Levels), maxLevelOverrides, ErrInvalid)
	}
	for _, o := range in.Levels {
		l := Level{Level: o.Level, MaxBlocks: o.MaxBlocks, MaxBytes: o.MaxBytes}
		if o.MaxAge != "" {
			d, err := time.ParseDuration(o.MaxAge)
			if err != nil {
				return out, fmt.Errorf("levels: level %d: max_age %q: want a duration such as 30s: %w", o.Level, o.MaxAge, ErrInvalid)
			}
			l.MaxAge = d
		}
		switch o.CrossShard {
		case "":
		case On.String():
			l.CrossShard = On
		case Off.String():
			l.CrossShard = Off
		default:
			return out, fmt.Errorf("levels: level %d: cross_shard %q, want on or off: %w", o.Level, o.CrossShard, ErrInvalid)
		}
		out.Levels = append(out.Levels, l)
	}
	return out, nil
}

// renamedKeys maps the thresholds' former JSON keys to their names now.
var renamedKeys = [...]struct{ old, now string }{{"slow_debt", "slow_ready_batches"}, {"stop_debt", "stop_ready_batches"}}

// UnmarshalJSON decodes thresholds with known keys only. A former key is
// refused with an error that names the key to use.
func (th *thresholdsJSON) UnmarshalJSON(data []byte) error {
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) == nil {
		for _, k := range renamedKeys {
			if _, ok := keys[k.old]; ok {
				return fmt.Errorf("thresholds: %q is now %q (the debt thresholds count ready batches: jobs that could be planned now)", k.old, k.now)
			}
		}
	}
	type plain thresholdsJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode((*plain)(th))
}

// thresholdsJSONOf returns th in the JSON form: nil for none.
func thresholdsJSONOf(th Thresholds) *thresholdsJSON {
	if th == (Thresholds{}) {
		return nil
	}
	lim := func(l Limit) *limitJSON {
		if l == (Limit{}) {
			return nil
		}
		return &limitJSON{On: l.On, Off: l.Off}
	}
	return &thresholdsJSON{SlowBlocks: lim(th.SlowBlocks), StopBlocks: lim(th.StopBlocks), SlowReadyBatches: lim(th.SlowReadyBatches), StopReadyBatches: lim(th.StopReadyBatches)}
}

// thresholds converts the thresholds; nil is none.
func (th *thresholdsJSON) thresholds() Thresholds {
	if th == nil {
		return Thresholds{}
	}
	lim := func(l *limitJSON) Limit {
		if l == nil {
			return Limit{}
		}
		return Limit{On: l.On, Off: l.Off}
	}
	return Thresholds{SlowBlocks: lim(th.SlowBlocks), StopBlocks: lim(th.StopBlocks), SlowReadyBatches: lim(th.SlowReadyBatches), StopReadyBatches: lim(th.StopReadyBatches)}
}

// runJSONOf returns r in the JSON form.
func runJSONOf(r RunPolicy) runJSON {
	out := runJSON{Mode: r.Mode.String(), Windows: []windowJSON{}}
	for _, w := range r.Windows {
		out.Windows = append(out.Windows, windowJSON{Days: dayNames(w.Days), Start: clock(w.Start), End: clock(w.End), OffsetMinutes: int(w.Offset)})
	}
	return out
}

// policy converts the run policy; its errors wrap ErrInvalid.
func (r *runJSON) policy() (RunPolicy, error) {
	var out RunPolicy
	switch r.Mode {
	case OnlyIn.String():
		out.Mode = OnlyIn
	case NeverIn.String():
		out.Mode = NeverIn
	default:
		return out, fmt.Errorf("mode %q, want only-in or never-in: %w", r.Mode, ErrInvalid)
	}
	if len(r.Windows) > maxWindows {
		return out, fmt.Errorf("%d windows, at most %d: %w", len(r.Windows), maxWindows, ErrInvalid)
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

func (w windowJSON) window() (Window, error) {
	var out Window
	if len(w.Days) == 0 {
		return out, fmt.Errorf("days: none, want some of Sun, Mon, Tue, Wed, Thu, Fri, Sat: %w", ErrInvalid)
	}
	for _, name := range w.Days {
		d, ok := parseDay(name)
		if !ok {
			return out, fmt.Errorf("day %q, want Sun, Mon, Tue, Wed, Thu, Fri or Sat: %w", name, ErrInvalid)
		}
		out.Days |= Days(d)
	}
	var err error
	if out.Start, err = parseClock(w.Start, false); err != nil {
		return out, fmt.Errorf("start: %w", err)
	}
	if out.End, err = parseClock(w.End, true); err != nil {
		return out, fmt.Errorf("end: %w", err)
	}
	if w.OffsetMinutes < -maxOffset || w.OffsetMinutes > maxOffset {
		return out, fmt.Errorf("offset_minutes %d, at most %d either way: %w", w.OffsetMinutes, maxOffset, ErrInvalid)
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

func dayNames(w Weekdays) []string {
	out := []string{}
	for d := time.Sunday; d <= time.Saturday; d++ {
		if w.has(d) {
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
		return 0, fmt.Errorf("%q, want HH:MM: %w", s, ErrInvalid)
	case hh == 24 && (mm != 0 || !end):
		return 0, fmt.Errorf("%q: 24:00 is only an end: %w", s, ErrInvalid)
	}
	return uint16(hh*60 + mm), nil
}

func clock(m uint16) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }
