package planner

import "math/bits"

// XXH64 (seed 0), a stable, well-distributed, non-cryptographic 64-bit hash
// (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md), for job
// names, over a stream of 64-bit words. Strings are read in place, so
// hashing a job's sources copies nothing.

const (
	xxPrime1 uint64 = 11400714785074694791
	xxPrime2 uint64 = 14029467366897019727
	xxPrime3 uint64 = 1609587929392839161
	xxPrime4 uint64 = 9650029242287828579
	xxPrime5 uint64 = 2870177450012600261
)

func xxRound(acc, input uint64) uint64 {
	acc += input * xxPrime2
	acc = bits.RotateLeft64(acc, 31)
	return acc * xxPrime1
}

func xxMerge(acc, val uint64) uint64 {
	acc ^= xxRound(0, val)
	return acc*xxPrime1 + xxPrime4
}

func xxInit() (v1, v2, v3, v4 uint64) {
	p1, p2 := xxPrime1, xxPrime2 // variables: the sums wrap around
	return p1 + p2, p2, 0, 0 - p1
}

func xxFold(v1, v2, v3, v4 uint64) uint64 {
	h := bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
	h = xxMerge(h, v1)
	h = xxMerge(h, v2)
	h = xxMerge(h, v3)
	return xxMerge(h, v4)
}

func xxTail8(h, k uint64) uint64 {
	h ^= xxRound(0, k)
	return bits.RotateLeft64(h, 27)*xxPrime1 + xxPrime4
}

func xxAvalanche(h uint64) uint64 {
	h ^= h >> 33
	h *= xxPrime2
	h ^= h >> 29
	h *= xxPrime3
	h ^= h >> 32
	return h
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// xxWords computes the XXH64 of a sequence of 64-bit words, as of their
// little-endian bytes.
type xxWords struct {
	v1, v2, v3, v4 uint64
	buf            [4]uint64
	n              int
	total          uint64
}

func (h *xxWords) reset() {
	*h = xxWords{}
	h.v1, h.v2, h.v3, h.v4 = xxInit()
}

func (h *xxWords) add(w uint64) {
	h.buf[h.n] = w
	h.n++
	h.total += 8
	if h.n == 4 {
		h.v1 = xxRound(h.v1, h.buf[0])
		h.v2 = xxRound(h.v2, h.buf[1])
		h.v3 = xxRound(h.v3, h.buf[2])
		h.v4 = xxRound(h.v4, h.buf[3])
		h.n = 0
	}
}

// addString adds s as its length and its bytes, zero-padded to a whole
// number of words.
func (h *xxWords) addString(s string) {
	h.add(uint64(len(s)))
	for ; len(s) >= 8; s = s[8:] {
		h.add(le64(s))
	}
	if len(s) > 0 {
		var w uint64
		for i := len(s) - 1; i >= 0; i-- {
			w = w<<8 | uint64(s[i])
		}
		h.add(w)
	}
}

func (h *xxWords) sum() uint64 {
	var s uint64
	if h.total >= 32 {
		s = xxFold(h.v1, h.v2, h.v3, h.v4)
	} else {
		s = xxPrime5
	}
	s += h.total
	for _, w := range h.buf[:h.n] {
		s = xxTail8(s, w)
	}
	return xxAvalanche(s)
}
