package fencing_test

import (
	"errors"
	"fmt"

	"github.com/compactkit/compactkit/fencing"
)

func ExampleOwns() {
	const held fencing.Token = 42 // the job's current token

	fmt.Println(fencing.Owns(true, held, 42))  // the current holder
	fmt.Println(fencing.Owns(true, held, 41))  // a worker from an earlier assignment
	fmt.Println(fencing.Owns(true, held, 43))  // a forged token
	fmt.Println(fencing.Owns(false, held, 42)) // the job is no longer in progress
	// Output:
	// true
	// false
	// false
	// false
}

func ExampleGuard() {
	var g fencing.Guard // the zero value is ready to use

	// The job was assigned with token 10, then reassigned with token 15.
	fmt.Println(g.Check("job-7", 10))
	fmt.Println(g.Check("job-7", 15))

	// The first worker, unaware it lost the job, tries to write again.
	err := g.Check("job-7", 10)
	fmt.Println(errors.Is(err, fencing.ErrStaleToken))
	fmt.Println(err)

	// Once the job has ended, the host drops it, and any token is
	// accepted for it again.
	g.Forget("job-7")
	fmt.Println(g.Check("job-7", 10))
	// Output:
	// <nil>
	// <nil>
	// true
	// fencing: stale token: resource "job-7": token 10 is older than token 15
	// <nil>
}
