// Package hidden is internal: not in the listing.
package hidden

// Hidden is not listed.
func Hidden() {}
