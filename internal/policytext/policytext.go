// Package policytext writes a tenant's scheduling policy as the status
// page and compactctl show it, one setting at a time, and reads the text
// form of a level override that compactctl's -level flag takes. Every
// function is a pure function of its arguments; "" stands for a setting
// left at the zero policy's value.
package policytext

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/compactkit/compactkit/policy"
)

// Cap says the policy's caps of jobs in progress in words: "2",
// "1 per shard", "4 · 1 per shard" or "none".
func Cap(p policy.Tenant) string {
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

// Run says when the policy lets new jobs start: "any time", or the run
// policy's mode and windows ("only-in Mon,Tue 22:00-06:00 UTC+01:00"),
// followed by each level's ("level 1 never-in ..."), separated by " · ".
func Run(p policy.Tenant) string {
	var parts []string
	if p.Run.Mode != policy.NeverIn || len(p.Run.Windows) > 0 {
		parts = append(parts, run(p.Run))
	}
	for _, lr := range p.LevelRuns {
		parts = append(parts, fmt.Sprintf("level %d %s", lr.Level, run(lr.Run)))
	}
	if len(parts) == 0 {
		return "any time"
	}
	return strings.Join(parts, " · ")
}

// run writes the mode and the windows.
func run(r policy.RunPolicy) string {
	ws := make([]string, len(r.Windows))
	for i, w := range r.Windows {
		ws[i] = w.String()
	}
	return r.Mode.String() + " " + strings.Join(ws, "; ")
}

// Pressure writes the policy's backpressure thresholds as compactctl's
// flags take them ("slow 100/80, stop 500/400, slow-ready-batches 10/5,
// stop-ready-batches 20/20"), the tenant's, then each shard's after "per
// shard:".
func Pressure(p policy.Tenant) string {
	var parts []string
	if s := thresholds(p.Pressure); s != "" {
		parts = append(parts, s)
	}
	if s := thresholds(p.ShardPressure); s != "" {
		parts = append(parts, "per shard: "+s)
	}
	return strings.Join(parts, " · ")
}

// thresholds writes the limits set.
func thresholds(th policy.Thresholds) string {
	var ls []string
	for _, l := range []struct {
		name string
		l    policy.Limit
	}{{"slow", th.SlowBlocks}, {"stop", th.StopBlocks}, {"slow-ready-batches", th.SlowReadyBatches}, {"stop-ready-batches", th.StopReadyBatches}} {
		if l.l != (policy.Limit{}) {
			ls = append(ls, fmt.Sprintf("%s %d/%d", l.name, l.l.On, l.l.Off))
		}
	}
	return strings.Join(ls, ", ")
}

// NotBefore writes the policy's not-before time in RFC 3339.
func NotBefore(p policy.Tenant) string {
	if p.NotBefore == 0 {
		return ""
	}
	return time.Unix(0, p.NotBefore).UTC().Format(time.RFC3339Nano)
}

// StaleAfter writes the policy's staleness threshold.
func StaleAfter(p policy.Tenant) string {
	if p.StaleAfter == 0 {
		return ""
	}
	return p.StaleAfter.String()
}

// Levels writes the policy's level overrides as compactctl's -level flags
// take them, space-separated: "0:blocks=40,age=2m0s 1:cross=on".
func Levels(p policy.Tenant) string {
	out := make([]string, len(p.Levels))
	for i, l := range p.Levels {
		var kv []string
		if l.MaxBlocks != 0 {
			kv = append(kv, "blocks="+strconv.Itoa(l.MaxBlocks))
		}
		if l.MaxBytes != 0 {
			kv = append(kv, "bytes="+strconv.FormatInt(l.MaxBytes, 10))
		}
		if l.MaxAge != 0 {
			kv = append(kv, "age="+l.MaxAge.String())
		}
		if l.CrossShard != policy.Inherit {
			kv = append(kv, "cross="+l.CrossShard.String())
		}
		out[i] = fmt.Sprintf("%d:%s", l.Level, strings.Join(kv, ","))
	}
	return strings.Join(out, " ")
}

// ParseLevel parses a level override in the form Levels writes,
// "L:blocks=N,bytes=N,age=DURATION,cross=on|off", with at least one of the
// settings, into its JSON form (an element of a policy's "levels"). It
// checks the form only: decoding the policy checks the duration and the
// cross-shard value, and the state machine the rest.
func ParseLevel(s string) (map[string]any, error) {
	l, settings, ok := strings.Cut(s, ":")
	level, err := strconv.ParseUint(l, 10, 32)
	if !ok || err != nil || settings == "" {
		return nil, fmt.Errorf("%q: want L:blocks=N,bytes=N,age=DURATION,cross=on|off", s)
	}
	out := map[string]any{"level": level}
	for _, kv := range strings.Split(settings, ",") {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "blocks":
			out["max_blocks"], err = strconv.Atoi(v)
		case "bytes":
			out["max_bytes"], err = strconv.ParseInt(v, 10, 64)
		case "age":
			out["max_age"] = v
		case "cross":
			out["cross_shard"] = v
		default:
			err = errors.New("unknown setting")
		}
		if err != nil {
			return nil, fmt.Errorf("%q: %q: want blocks=N, bytes=N, age=DURATION or cross=on|off", s, kv)
		}
	}
	return out, nil
}
