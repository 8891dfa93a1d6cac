package compactkit_test

import (
	"errors"
	"fmt"

	ck "github.com/compactkit/compactkit"
)

// A worker reports on the jobs it holds and asks for more; the request is
// validated and encoded for the wire. Job names are the planner's:
// <tenant>.s<shard>.l<level>.<sequence number>.<hash> (see package planner).
func ExamplePollRequest() {
	out := ck.BlockMeta{
		ID:      ck.OutputID("acme.s7.l0.12.00a1b2c3d4e5f607", 57, 0),
		Tenant:  "acme",
		Shard:   7,
		Level:   1,
		MinTime: 1_000,
		MaxTime: 9_000,
		Size:    4096,
		Datasets: []ck.DatasetMeta{
			{Name: "checkout", Size: 4096, Records: 120, MinTime: 1_000, MaxTime: 9_000},
		},
	}
	req := ck.PollRequest{
		WorkerID: "worker-1",
		Seq:      12,
		Updates: []ck.StatusUpdate{
			{Job: "acme.s7.l0.12.00a1b2c3d4e5f607", Token: 57, Status: ck.ReportSuccess, Outputs: []ck.BlockMeta{out}},
			{Job: "acme.s3.l0.9.0f0e0d0c0b0a0908", Token: 60, Status: ck.ReportInProgress},
		},
		FreeSlots: 1,
	}
	if err := req.Validate(); err != nil {
		fmt.Println("invalid:", err)
		return
	}
	wire, _ := req.MarshalBinary()
	var got ck.PollRequest
	if err := got.UnmarshalBinary(wire); err != nil {
		fmt.Println("decode:", err)
		return
	}
	fmt.Println(got.WorkerID, got.Seq, len(got.Updates), got.Updates[0].Status, got.Updates[1].Status)
	fmt.Println(ck.ObjectKey(out.ID))
	// Output:
	// worker-1 12 2 success in_progress
	// blocks/acme.s7.l0.12.00a1b2c3d4e5f607/57/0
}

// Validation errors wrap ErrInvalid and say what is wrong.
func ExampleBlockMeta_Validate() {
	b := ck.BlockMeta{ID: "01JD8ZQ8Y0S1G6N9V3C2X7K4PB", Tenant: "acme", MinTime: 20, MaxTime: 10}
	err := b.Validate()
	fmt.Println(errors.Is(err, ck.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// block 01JD8ZQ8Y0S1G6N9V3C2X7K4PB: min time 20 after max time 10: compactkit: invalid time range
}

// The outputs of an attempt live under a prefix of their own, so an attempt
// that ends without being committed can be deleted whole.
func ExampleAttemptPrefix() {
	fmt.Println(ck.AttemptPrefix("acme.s7.l1.31.0011223344556677", 42))
	fmt.Println(ck.ObjectKey(ck.OutputID("acme.s7.l1.31.0011223344556677", 42, 0)))
	// Output:
	// blocks/acme.s7.l1.31.0011223344556677/42/
	// blocks/acme.s7.l1.31.0011223344556677/42/0
}
