// Package storetest is the conformance suite of blockmerge's object
// stores: [Run] checks a [blockmerge.Store] implementation against the
// contract of the interface (atomic puts, ranges, not-found errors, key
// validation, listing order, prefix deletion, concurrency).
//
// The suite proves the contract on the operations it tries, on the keys
// and sizes it tries (objects up to 24 MiB), one store at a time; it does
// not prove durability across a crash or a process restart, nor a store's
// behaviour under its backend's faults (throttling, partial outages).
// Its own tests run it on the memory store with one flaw per property, and
// each flaw fails its property.
//
// It is a test-support package: it imports "testing" and is meant to be
// called from a store's tests, as the memory, filesystem and objstore
// stores do:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) blockmerge.Store { return blockmerge.NewMemStore() })
//	}
package storetest
