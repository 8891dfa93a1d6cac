// Package dups finds repeated keys in linear time, for the validation of
// input that may come from anyone: a pairwise comparison lets a request of
// n items cost n² comparisons on every replica.
package dups

// small is the number of keys up to which comparing every pair is cheaper
// than building a set.
const small = 16

// Tracker remembers the keys seen so far, so that a loop validating
// elements one by one can ask, at each, whether its key appeared before —
// keeping the order in which a validation reports its first error. The
// zero value is ready; it allocates a set only beyond a few keys.
type Tracker[K comparable] struct {
	keys []K
	set  map[K]struct{}
}

// Seen reports whether k was seen before, and remembers it.
func (t *Tracker[K]) Seen(k K) bool {
	if t.set == nil {
		for _, x := range t.keys {
			if x == k {
				return true
			}
		}
		if len(t.keys) < small {
			t.keys = append(t.keys, k)
			return false
		}
		t.set = make(map[K]struct{}, 2*small)
		for _, x := range t.keys {
			t.set[x] = struct{}{}
		}
		t.keys = nil
	}
	if _, dup := t.set[k]; dup {
		return true
	}
	t.set[k] = struct{}{}
	return false
}
