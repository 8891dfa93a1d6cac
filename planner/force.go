package planner

import (
	"fmt"

	"github.com/compactkit/compactkit/internal/ident"
)

// Force makes a tenant's batches ready now, whatever their size and age:
// the batches whose first block arrived (log time) at or before Before.
// It is an operator's "compact now", passed to planning per call in
// [PlanOptions].Force; the planner does not store it.
//
// A forced batch is formed by its level's usual rules (MaxBlocks, MaxBytes,
// MaxSpan) and competes at its own level, exactly like a batch ready by
// age; once it is planned, the key's next batch is forced too if its first
// block arrived at or before Before. Batches that are ready anyway are not
// affected. Held tenants (see [Planner.SetHold]) are never forced, and
// keys that [PlanOptions].Skip passes over are passed over when forced too.
// An entry that names a tenant with AllTenants, or an invalid tenant name,
// is ignored.
type Force struct {
	// Tenant is the tenant forced; empty for the multi-tenant level-0
	// segments, unless AllTenants is set.
	Tenant string
	// AllTenants forces every tenant; Tenant must then be empty.
	AllTenants bool
	// Level is the level forced, unless AllLevels is set.
	Level uint32
	// AllLevels forces every level.
	AllLevels bool
	// Before is the latest arrival time (log time, inclusive) of the first
	// block of a forced batch.
	Before int64
}

// Validate reports whether f is well formed: a tenant name that
// of at most 256 bytes of valid UTF-8 without control characters, empty with AllTenants. [View.Next]
// ignores entries that are not.
func (f *Force) Validate() error {
	if f.AllTenants && f.Tenant != "" {
		return fmt.Errorf("force: tenant %q with all tenants: %w", f.Tenant, errInvalidForce)
	}
	if err := ident.ValidateTenant(f.Tenant); err != nil {
		return fmt.Errorf("force: %w", err)
	}
	return nil
}

// matches reports whether f applies to key k.
func (f *Force) matches(k key) bool {
	return (f.AllTenants || f.Tenant == k.tenant) && (f.AllLevels || f.Level == k.level)
}
