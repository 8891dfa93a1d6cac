// Package storetest is the conformance suite of blockmerge's object
// stores: [Run] checks a [blockmerge.Store] implementation against the
// contract of the interface (atomic puts, ranges, not-found errors, key
// validation, listing order, prefix deletion, concurrency).
//
// It is a test-support package: it imports "testing" and is meant to be
// called from a store's tests, as the memory, filesystem and objstore
// stores do:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) blockmerge.Store { return blockmerge.NewMemStore() })
//	}
package storetest
