// Package namekey orders names by a prefix kept inline: a [Name] holds a
// string and its first 24 bytes as three big-endian integers, zero-padded.
// Comparing two Names compares the integers first and the strings only
// where the integers tie, so a search in a tree of Names compares integers
// in the node it reads and loads the bytes of one or two names instead of
// one per comparison: job names, which share their tenant's prefix, are
// told apart within their first 24 bytes when the tenant's name is short.
//
// The order is the strings' order, for any strings, NUL bytes included: a
// prefix that is strictly less belongs to a string that is strictly less
// (at the first differing byte the lesser string has the lesser byte, or
// has ended and is a prefix of the other), and equal prefixes defer to the
// strings. A Name is built only by [Of], so its prefix always matches its
// string.
package namekey

import "strings"

// Name is a string and its inline prefix. The zero Name is the empty
// string's.
type Name struct {
	a, b, c uint64
	s       string
}

// Of returns the Name of s.
func Of(s string) Name {
	return Name{Word(s, 0), Word(s, 8), Word(s, 16), s}
}

// Word returns the 8 bytes of s from offset i, big-endian, zero-padded.
// Comparing strings' words from offset 0 on, in turn, orders them as the
// strings are ordered wherever the words differ (the argument of the
// package documentation); where they tie, the strings decide.
func Word(s string, i int) uint64 {
	if i+8 <= len(s) {
		// Eight bytes at once, which the compiler loads as one word.
		b := s[i : i+8]
		return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
			uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
	}
	var w uint64
	for j := range 8 {
		w <<= 8
		if i+j < len(s) {
			w |= uint64(s[i+j])
		}
	}
	return w
}

// String returns the name.
func (n Name) String() string { return n.s }

// Compare orders n and o as strings.Compare orders their strings.
func (n Name) Compare(o Name) int {
	switch {
	case n.a != o.a:
		return cmp3(n.a < o.a)
	case n.b != o.b:
		return cmp3(n.b < o.b)
	case n.c != o.c:
		return cmp3(n.c < o.c)
	}
	return strings.Compare(n.s, o.s)
}

// Less reports whether n orders before o.
func (n Name) Less(o Name) bool { return n.Compare(o) < 0 }

func cmp3(less bool) int {
	if less {
		return -1
	}
	return 1
}
