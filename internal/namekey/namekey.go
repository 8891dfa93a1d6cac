// Package namekey orders strings by a prefix kept inline in a tree's
// items: the first 24 bytes of a string, as three big-endian integers,
// zero-padded. Comparing keys orders two strings as comparing the strings
// does wherever the keys differ, and the strings themselves decide only
// where the keys tie. A search in a tree of names then compares integers
// in the node it reads, and loads the bytes of one or two names instead
// of one per comparison: job names, which share their tenant's prefix, are
// told apart within their first 24 bytes when the tenant's name is short.
//
// The order holds for any strings, NUL bytes included: a key that is
// strictly less belongs to a string that is strictly less (at the first
// differing byte the lesser string has the lesser byte, or has ended and
// is a prefix of the other), and equal keys defer to the strings.
package namekey

import "strings"

// Key is the inline prefix of a string.
type Key struct{ a, b, c uint64 }

// Of returns the key of s.
func Of(s string) Key {
	return Key{word(s, 0), word(s, 8), word(s, 16)}
}

// word returns the 8 bytes of s from offset i, big-endian, zero-padded.
func word(s string, i int) uint64 {
	var w uint64
	for j := range 8 {
		w <<= 8
		if i+j < len(s) {
			w |= uint64(s[i+j])
		}
	}
	return w
}

// Compare orders the strings a and b, whose keys are ka and kb, as
// strings.Compare(a, b) does.
func Compare(ka Key, a string, kb Key, b string) int {
	switch {
	case ka.a != kb.a:
		return cmp3(ka.a < kb.a)
	case ka.b != kb.b:
		return cmp3(ka.b < kb.b)
	case ka.c != kb.c:
		return cmp3(ka.c < kb.c)
	}
	return strings.Compare(a, b)
}

// Less reports whether a orders before b, given their keys.
func Less(ka Key, a string, kb Key, b string) bool {
	return Compare(ka, a, kb, b) < 0
}

func cmp3(less bool) int {
	if less {
		return -1
	}
	return 1
}
