// Package xxh64 is XXH64 (seed 0), a stable, well-distributed,
// non-cryptographic 64-bit hash
// (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md), over a
// sequence of 64-bit words: the caller collects them in an array on the
// stack ([AppendString]), then [Sum] hashes them in one loop. The planner
// names jobs with it (a job name's hash is part of the replicated state),
// and internal/bloom hashes names with it.
package xxh64

import "math/bits"

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

// AppendString appends s to the words ws as its length, then its bytes,
// zero-padded to a whole number of words.
func AppendString(ws []uint64, s string) []uint64 {
	ws = append(ws, uint64(len(s)))
	for ; len(s) >= 8; s = s[8:] {
		ws = append(ws, le64(s))
	}
	if len(s) > 0 {
		var w uint64
		for i := len(s) - 1; i >= 0; i-- {
			w = w<<8 | uint64(s[i])
		}
		ws = append(ws, w)
	}
	return ws
}

// Sum returns the XXH64 of the words ws, as of their little-endian
// bytes, hashed in one loop.
func Sum(ws []uint64) uint64 {
	total := 8 * uint64(len(ws))
	var s uint64
	if len(ws) >= 4 {
		v1, v2, v3, v4 := xxInit()
		for ; len(ws) >= 4; ws = ws[4:] {
			v1 = xxRound(v1, ws[0])
			v2 = xxRound(v2, ws[1])
			v3 = xxRound(v3, ws[2])
			v4 = xxRound(v4, ws[3])
		}
		s = xxFold(v1, v2, v3, v4)
	} else {
		s = xxPrime5
	}
	s += total
	for _, w := range ws {
		s = xxTail8(s, w)
	}
	return xxAvalanche(s)
}
