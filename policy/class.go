package policy

import (
	"fmt"

	"github.com/compactkit/compactkit/internal/enum"
)

// Class is a tenant's priority class: at the same level, the jobs of a
// High tenant start before a Medium tenant's, and those before a Low
// tenant's. The zero value is Medium.
type Class uint8

// The classes.
const (
	Medium Class = iota
	High
	Low
)

// Rank orders the classes: 0 for High, 1 for Medium, 2 for Low (and 3 for
// an unknown class, which [Tenant.Validate] refuses).
func (c Class) Rank() int {
	switch c {
	case High:
		return 0
	case Medium:
		return 1
	case Low:
		return 2
	default:
		return 3
	}
}

// String returns "high", "medium" or "low".
func (c Class) String() string {
	return enum.Name("Class", c, Medium, "medium", "high", "low")
}

// validate reports whether c is one of the three classes; the error wraps
// [ErrInvalid].
func (c Class) validate() error {
	if c > Low {
		return fmt.Errorf("policy: class %d: %w", uint8(c), ErrInvalid)
	}
	return nil
}

// parseClass returns the class named s ("high", "medium" or "low").
func parseClass(s string) (Class, error) {
	for c := Medium; c <= Low; c++ {
		if c.String() == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("policy: class %q, want high, medium or low: %w", s, ErrInvalid)
}
