package storetest_test

import (
	"fmt"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/storetest"
)

// Every key in InvalidKeys is refused by the stores' key validation; Run
// checks that a store refuses each of them.
func ExampleRun() {
	refused := 0
	for _, key := range storetest.InvalidKeys {
		if blockmerge.ValidateKey(key) != nil {
			refused++
		}
	}
	fmt.Println(refused == len(storetest.InvalidKeys))
	// A store's own tests call, for instance:
	//
	//	func TestConformance(t *testing.T) {
	//		storetest.Run(t, func(t *testing.T) blockmerge.Store { return blockmerge.NewMemStore() })
	//	}

	// Output:
	// true
}
