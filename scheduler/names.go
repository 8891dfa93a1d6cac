package scheduler

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
)

// nameFilter is a Bloom filter of the names of the scheduler's jobs and
// remembered completions: it answers "surely not" for most names that are
// neither, without the search of the job trees (a walk down two B-trees
// that waits for memory at every node) that a new job's name would
// otherwise cost each time it is checked — by the schedule that adds it,
// by the transaction that applies it, and against the completions.
//
// It only grows: a name stays in it after its job leaves, until the
// scheduler builds a new filter from its trees (Scheduler.addName), sized
// for twice the names it holds then, once the filter is full. So a filter that
// says no for a name says it for every earlier state too, and a schedule
// keeps the filter it opened on: the scheduler sets bits of that filter
// while the schedule reads it (atomically), but clears none.
//
// A name sets 4 bits of one 64-bit word (a blocked filter: one memory read
// per query), 16 bits a name: with the filter at its fullest, about one
// name in 500 that is not in it passes for one that may be.
type nameFilter struct {
	words []atomic.Uint64 // a power of two of them
	// n is the number of names added since the filter was built, and max
	// the number past which the scheduler rebuilds it.
	n, max int
}

// newNameFilter returns an empty filter sized for up to size names (at
// least 1,024).
func newNameFilter(size int) *nameFilter {
	size = max(size, 1024)
	w := 1 << bits.Len(uint(size*16/64-1)) // 16 bits a name, rounded up to a power of two
	return &nameFilter{words: make([]atomic.Uint64, w), max: size}
}

// nameHash returns a hash of name: deterministic (no seed), every byte
// mixed in, 8 at a time.
func nameHash(name string) uint64 {
	const (
		p1 = 0x9e3779b97f4a7c15
		p2 = 0xc2b2ae3d27d4eb4f
	)
	h := uint64(len(name)) * p1
	for ; len(name) >= 8; name = name[8:] {
		h = bits.RotateLeft64(h^le64(name)*p2, 31) * p1
	}
	var tail [8]byte
	copy(tail[:], name)
	h = bits.RotateLeft64(h^binary.LittleEndian.Uint64(tail[:])*p2, 31) * p1
	// Final avalanche (xxh64's).
	h ^= h >> 33
	h *= p2
	h ^= h >> 29
	h *= 0x165667b19e3779f9
	h ^= h >> 32
	return h
}

// addName puts name in the scheduler's name filter, first replacing a
// full filter by one built from the trees, sized for twice the names they
// hold: each name is hashed O(1) times, amortized. A name whose bits
// are set already (a completed job's, added with the job) is not counted.
// The schedules open keep the filter they were opened on.
func (s *Scheduler) addName(name string) {
	h := nameHash(name)
	if s.names.has(h) {
		return
	}
	if f := s.names; f.n >= f.max {
		live := s.byName.Len() + s.completed.Len()
		nf := newNameFilter(2 * live)
		s.byName.Ascend(func(r named) bool {
			nf.add(nameHash(r.n.String()))
			return true
		})
		s.completed.Ascend(func(r doneRef) bool {
			nf.add(nameHash(r.n.String()))
			return true
		})
		s.names = nf
	}
	s.names.add(h)
}

// le64 returns the first 8 bytes of s as a little-endian integer.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// at returns the word of the filter a hash selects and the 4 bits it sets
// there.
func (f *nameFilter) at(h uint64) (*atomic.Uint64, uint64) {
	w := &f.words[h&uint64(len(f.words)-1)]
	m := uint64(1)<<(h>>40&63) | uint64(1)<<(h>>46&63) | uint64(1)<<(h>>52&63) | uint64(1)<<(h>>58&63)
	return w, m
}

// add puts the name of hash h in the filter. Only the scheduler calls it.
func (f *nameFilter) add(h uint64) {
	w, m := f.at(h)
	w.Or(m)
	f.n++
}

// has reports whether the name of hash h may be in the filter.
func (f *nameFilter) has(h uint64) bool {
	w, m := f.at(h)
	return w.Load()&m == m
}

// mayHave reports whether name may be in the filter; false means it was
// never added.
func (f *nameFilter) mayHave(name string) bool { return f.has(nameHash(name)) }
