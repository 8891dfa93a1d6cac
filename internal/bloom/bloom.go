// Package bloom is a grow-only Bloom filter of strings, for the states'
// negative lookups: a name or ID that the filter lacks was never added,
// so its owner skips the search of the trees that would find nothing —
// a walk down B-trees that waits for memory at every node.
//
// A [Filter] only grows: its owner adds (on one goroutine, or under its
// lock) while the views it gave the filter to read it on others — bits are
// set and read atomically, and never cleared. A filter that lacks a string
// therefore lacked it at every earlier moment too, so a view may keep the
// filter that was current when it opened and trust its "no" for the state
// it reads. To forget strings its trees no longer hold, the owner builds a
// new filter from them once the old one is [Filter.Full], sized for a
// multiple of what they hold (each string is then hashed O(1) times,
// amortized); views opened before keep the old one.
//
// A string sets 4 bits of one 64-bit word (a blocked filter: one memory
// read per query), 16 bits a string: a full filter lets about one string
// in 500 that it lacks pass for one it may hold. The hash is fixed (no
// seed): the filter decides nothing but whether a tree is searched, and
// its owner's state stays deterministic either way.
package bloom

import (
	"math/bits"
	"sync/atomic"

	"github.com/compactkit/compactkit/internal/xxh64"
)

// Filter is a grow-only Bloom filter; see the package documentation.
type Filter struct {
	words []atomic.Uint64 // a power of two of them
	// n is the number of strings added, and max the number it is sized
	// for. Only the owner reads them.
	n, max int
}

// New returns an empty filter sized for size strings (at least 1,024).
func New(size int) *Filter {
	size = max(size, 1024)
	w := 1 << bits.Len(uint(size*16/64-1)) // 16 bits a string, rounded up to a power of two
	return &Filter{words: make([]atomic.Uint64, w), max: size}
}

// Hash returns the hash of s that [Filter.Add] and [Filter.Has] take: the
// XXH64 of its length and bytes in words (internal/xxh64).
func Hash(s string) uint64 {
	var buf [40]uint64 // a name of up to 312 bytes; longer ones grow on the heap
	return xxh64.Sum(xxh64.AppendString(buf[:0], s))
}

// at returns the word of the filter a hash selects and the 4 bits it sets
// there.
func (f *Filter) at(h uint64) (*atomic.Uint64, uint64) {
	w := &f.words[h&uint64(len(f.words)-1)]
	m := uint64(1)<<(h>>40&63) | uint64(1)<<(h>>46&63) | uint64(1)<<(h>>52&63) | uint64(1)<<(h>>58&63)
	return w, m
}

// Add adds the string of hash h, and counts it. Only the owner calls it.
func (f *Filter) Add(h uint64) {
	w, m := f.at(h)
	w.Or(m)
	f.n++
}

// Has reports whether the string of hash h may have been added; false
// means it never was.
func (f *Filter) Has(h uint64) bool {
	w, m := f.at(h)
	return w.Load()&m == m
}

// MayHave is Has of s's hash.
func (f *Filter) MayHave(s string) bool { return f.Has(Hash(s)) }

// Full reports whether the filter holds as many strings as it is sized
// for: its owner then builds a new one. Only the owner calls it.
func (f *Filter) Full() bool { return f.n >= f.max }
