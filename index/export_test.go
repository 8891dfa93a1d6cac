package index

import ck "github.com/compactkit/compactkit"

// ReleaseTo hands out, at log time now, up to limit releasable tombstones
// (limit <= 0: no limit) to job the way a host does: it pulls them from a
// view ([View.Releasable]) and attaches them ([Index.Attach]).
func ReleaseTo(x *Index, now int64, job string, limit int) []ck.Tombstone {
	v := x.View()
	defer v.Close()
	next := v.Releasable(max(now, v.Now()))
	var ts []ck.Tombstone
	for limit <= 0 || len(ts) < limit {
		t, ok := next()
		if !ok {
			break
		}
		ts = append(ts, t)
	}
	return x.Attach(now, job, ts)
}

// HeldBy returns the tombstones job holds, in (kind, target) order.
func HeldBy(x *Index, job string) []ck.Tombstone {
	var out []ck.Tombstone
	for _, t := range x.View().Tombstones(ck.Tombstone{}, 0) {
		if t.Job == job {
			out = append(out, t.Tombstone)
		}
	}
	return out
}
