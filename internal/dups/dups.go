// Package dups finds repeated keys in linear time, for the validation of
// input that may come from anyone: a pairwise comparison lets a request of
// n items cost n² comparisons on every replica.
package dups

// small is the number of keys up to which comparing every pair is cheaper
// than building a set.
const small = 32

// Tracker remembers the keys seen so far, so that a loop validating
// elements one by one can ask, at each, whether its key appeared before —
// keeping the order in which a validation reports its first error. The
// zero value is ready; it keeps its first keys inline and allocates a set
// only beyond them.
type Tracker[K comparable] struct {
	n    int
	fps  [small]uint64 // the first n keys' fingerprints (see fingerprint)
	keys [small]K      // the first n keys, while set is nil
	set  map[K]struct{}
}

// Seen reports whether k was seen before, and remembers it.
func (t *Tracker[K]) Seen(k K) bool {
	if t.set == nil {
		f := fingerprint(k)
		for i, x := range t.fps[:t.n] {
			if x == f && t.keys[i] == k {
				return true
			}
		}
		if t.n < small {
			t.fps[t.n], t.keys[t.n] = f, k
			t.n++
			return false
		}
		t.set = make(map[K]struct{}, 2*small)
		for _, x := range t.keys[:] {
			t.set[x] = struct{}{}
		}
		t.keys, t.n = [small]K{}, 0
	}
	if _, dup := t.set[k]; dup {
		return true
	}
	t.set[k] = struct{}{}
	return false
}

// fingerprint returns a word that equal keys share: for a string, its last
// 8 bytes (where IDs and names that share a prefix differ; a shorter
// string's bytes after its length), so that comparing fingerprints settles
// most pairs without reading two strings; 0 for other keys.
func fingerprint[K comparable](k K) uint64 {
	s, ok := any(k).(string)
	if !ok {
		return 0
	}
	f := uint64(len(s))
	for i := max(0, len(s)-8); i < len(s); i++ {
		f = f<<8 | uint64(s[i])
	}
	return f
}
