package planner

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/internal/xxh64"
)

// Job names: see the package documentation.
const (
	maxTenantInName = 96
	hashDigits      = 16
	nameHashVersion = 1
)

// jobName returns the name of the job with the given key, sequence number
// and sources. Its hash is the XXH64 of the little-endian 64-bit words
// [1, S(tenant), shard, level, seq, len(sources), S(source 1), ...,
// S(source n)], where S(s) is len(s) followed by the bytes of s in words,
// the last one zero-padded (see xxh64.AppendString).
func jobName(k key, seq uint64, sources []string) string {
	var buf [128]uint64 // the words of 20 sources of up to 40 bytes; more grow on the heap
	ws := append(buf[:0], nameHashVersion)
	ws = xxh64.AppendString(ws, k.tenant)
	ws = append(ws, uint64(k.shard), uint64(k.level), seq, uint64(len(sources)))
	for _, s := range sources {
		ws = xxh64.AppendString(ws, s)
	}
	sum := xxh64.Sum(ws)

	var b [maxTenantInName + 80]byte
	out := appendKeyPrefix(b[:0], k)
	out = appendDec(out, seq)
	out = append(out, '.')
	const digits = "0123456789abcdef"
	for i := hashDigits - 1; i >= 0; i-- {
		out = append(out, digits[sum>>(4*i)&0xf])
	}
	return string(out)
}

// nameMemo remembers results of jobName. Hashing the sources reads
// their bytes, which lie in the blocks' allocations, a cache miss each; a
// hit compares the strings' headers instead: the same key and sequence
// number, and sources that are the same strings — the same bytes, not
// equal ones (Go strings are immutable) — give the same name.
//
// It holds the result admissible computed last (the state machine checks
// a new job's plan, then claims it, in the same entry), and the names the
// latest view that planned computed for its plans (see handoff): a leader
// applies the plans its own view made, with the view's source strings.
// The arrays of the names it drops go to the next view (spare), so that
// a leader's polls allocate none.
type nameMemo struct {
	last    named
	planned viewNames
	spare   viewNames
}

// named is one result of jobName.
type named struct {
	k    key
	seq  uint64
	srcs []string
	name string
}

// viewNames are the names a view gave its plans, by sequence number, with
// the array their sources are in (the view's copy of them: the caller
// may change a plan's).
type viewNames struct {
	names []named
	srcs  []string
}

// add appends the name of a plan.
func (vn *viewNames) add(k key, seq uint64, sources []string, name string) {
	if vn.srcs == nil {
		vn.names = make([]named, 0, 16)
		vn.srcs = make([]string, 0, 16*max(4, len(sources)))
	}
	at := len(vn.srcs)
	vn.srcs = append(vn.srcs, sources...)
	vn.names = append(vn.names, named{k: k, seq: seq, srcs: vn.srcs[at:len(vn.srcs):len(vn.srcs)], name: name})
}

// same reports whether n is jobName(k, seq, sources).
func (n *named) same(k key, seq uint64, sources []string) bool {
	return n.name != "" && n.k == k && n.seq == seq && sameStrings(n.srcs, sources)
}

// of returns jobName(k, seq, sources), computing it only if the memo
// does not hold it; h holds the names a view handed over since.
func (m *nameMemo) of(k key, seq uint64, sources []string, h *handoff) string {
	if m.last.same(k, seq, sources) {
		return m.last.name
	}
	h.mu.Lock()
	if h.names.names != nil {
		// The names held so far go to the next view, cleared (last may
		// be one of them).
		clear(m.planned.names)
		clear(m.planned.srcs)
		m.spare = viewNames{names: m.planned.names[:0], srcs: m.planned.srcs[:0]}
		m.planned, h.names = h.names, viewNames{}
		m.last = named{}
	}
	h.mu.Unlock()
	ns := m.planned.names
	if i, ok := slices.BinarySearchFunc(ns, seq, func(n named, seq uint64) int { return cmp.Compare(n.seq, seq) }); ok && ns[i].same(k, seq, sources) {
		m.last = ns[i]
		return m.last.name
	}
	m.last = named{k: k, seq: seq, srcs: slices.Clone(sources), name: jobName(k, seq, sources)}
	return m.last.name
}

// handoff passes the names a view computed for its plans to the planner
// when the view is closed (View.Close), where admissible finds them
// instead of hashing the sources again. The planner and its views share
// it; mu guards names.
type handoff struct {
	mu    *sync.Mutex // the views' mutex (state.vmu)
	names viewNames
}

// sameStrings reports whether a and b hold the same strings: equal
// lengths and the same bytes, by address. It reads no byte of them.
func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) || unsafe.StringData(a[i]) != unsafe.StringData(b[i]) {
			return false
		}
	}
	return true
}

// appendKeyPrefix appends what the names of key k's jobs start with: the
// tenant (sanitized), ".s", the shard, ".l", the level and ".". Another
// key's names may start with it too (tenants that sanitize alike, a
// tenant that ends in a shard's digits).
func appendKeyPrefix(out []byte, k key) []byte {
	switch t := k.tenant; {
	case t == "":
		out = append(out, '_')
	case len(t) <= maxTenantInName && ident.ValidateJobName(t) == nil:
		out = append(out, t...)
	default:
		out = append(out, ident.SanitizeName(t, maxTenantInName)...)
	}
	out = append(out, ".s"...)
	if k.shard == ck.AnyShard {
		out = append(out, 'x')
	} else {
		out = appendDec(out, uint64(k.shard))
	}
	out = append(out, ".l"...)
	out = appendDec(out, uint64(k.level))
	return append(out, '.')
}

// appendDec appends the decimal form of x.
func appendDec(b []byte, x uint64) []byte {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + x%10)
		x /= 10
		if x == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}

// nameSeq extracts the sequence number from a job name of the planner's
// form.
func nameSeq(name string) (uint64, bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || len(name)-i-1 != hashDigits {
		return 0, false
	}
	j := strings.LastIndexByte(name[:i], '.')
	if j < 0 {
		return 0, false
	}
	seq, err := strconv.ParseUint(name[j+1:i], 10, 64)
	return seq, err == nil
}

// cleanupName returns the name of a cleanup-only job planned at log time now
// with tombstones ts: "cleanup.", now in base 36, ".", and in hex the FNV-1a
// 64-bit hash of each tombstone's kind byte, target and a zero byte.
func cleanupName(now int64, ts []ck.Tombstone) string {
	h := fnv.New64a()
	for _, t := range ts {
		h.Write([]byte{byte(t.Kind)})
		h.Write([]byte(t.Target))
		h.Write([]byte{0})
	}
	return "cleanup." + strconv.FormatInt(now, 36) + "." + strconv.FormatUint(h.Sum64(), 16)
}
