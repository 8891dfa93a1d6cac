// Package enum names the values of compactkit's small enumerations (job
// statuses, change kinds, policy classes and the like), so that each
// type's String method is one line.
package enum

import "fmt"

// Name returns the name of v in an enumeration whose values run from
// first, one per name, in order; a value outside it is written "typ(n)".
func Name[T ~uint8](typ string, v, first T, names ...string) string {
	if v >= first && int(v-first) < len(names) {
		return names[v-first]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(v))
}
