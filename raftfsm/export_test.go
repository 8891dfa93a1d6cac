package raftfsm

// OldestVersion is oldestVersion, for the external tests.
const OldestVersion = oldestVersion

// Proposed returns the number of polls f keeps between encoding and
// applying them.
func Proposed(f *FSM) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.proposed)
}
