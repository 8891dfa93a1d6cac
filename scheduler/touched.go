package scheduler

import "unsafe"

// touchedSet maps the view's jobs a schedule changed to their overlays. It
// is an open-addressing hash table keyed by the records' addresses: a
// schedule touches few jobs, and a map of pointers cost as much to build as
// the B-tree lookups of a whole poll. Only membership is ever asked, never
// an order, so addresses cannot make a decision depend on memory layout.
type touchedSet struct {
	slots []touchedSlot // len is a power of two, at most half full
	n     int
}

type touchedSlot struct {
	j *job
	o *overlay
}

// touchedMin is the initial number of slots.
const touchedMin = 32

// slot returns the index of j's slot, or of the empty slot where it goes.
func (t *touchedSet) slot(j *job) int {
	mask := len(t.slots) - 1
	// Fibonacci hashing of the address; records are at least 8-byte
	// aligned, so the low bits carry nothing.
	h := int((uint64(uintptr(unsafe.Pointer(j))) * 0x9E3779B97F4A7C15) >> 32)
	for i := h & mask; ; i = (i + 1) & mask {
		if s := t.slots[i].j; s == nil || s == j {
			return i
		}
	}
}

// get returns j's overlay, or nil.
func (t *touchedSet) get(j *job) *overlay {
	if t.n == 0 {
		return nil
	}
	return t.slots[t.slot(j)].o
}

// put sets j's overlay.
func (t *touchedSet) put(j *job, o *overlay) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	i := t.slot(j)
	if t.slots[i].j == nil {
		t.n++
	}
	t.slots[i] = touchedSlot{j: j, o: o}
}

func (t *touchedSet) grow() {
	old := t.slots
	t.slots = make([]touchedSlot, max(touchedMin, 4*len(old)))
	for _, s := range old {
		if s.j != nil {
			t.slots[t.slot(s.j)] = s
		}
	}
}
