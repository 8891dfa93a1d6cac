package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/compactkit/compactkit/lease"
)

func ExampleGrant() {
	const second = int64(time.Second)
	now := 100 * second // log time of the entry that assigns the job

	deadline := lease.Grant(now, 15*time.Second)
	fmt.Println("deadline:", deadline/second)

	// A renewal at 110s moves the deadline to 110s + 15s; one at 111s for
	// a second never shortens it.
	deadline = lease.Extend(deadline, 110*second, 15*time.Second)
	fmt.Println("renewed deadline:", deadline/second)
	deadline = lease.Extend(deadline, 111*second, time.Second)
	fmt.Println("after a short renewal:", deadline/second)
	// Output:
	// deadline: 115
	// renewed deadline: 125
	// after a short renewal: 125
}

func ExampleExtend() {
	const second = int64(time.Second)
	// A new leader takes office at log time 200s, after an election that
	// took longer than the 15s lease; it extends every in-progress lease by
	// one lease duration before judging expiry.
	deadline := 190 * second
	deadline = lease.Extend(deadline, 200*second, 15*time.Second)
	fmt.Println(deadline / second)
	// Output:
	// 215
}

func ExampleKeeper() {
	// The worker sent the poll that got it the job, with a one-second
	// lease (leases are usually longer: this example runs in real time).
	sentAt := time.Now()
	granted := time.Second

	// renew asks the leader to renew the lease. Here the leader renews it
	// twice, then answers "no lease" (the job was reassigned, say).
	renewals := 0
	renew := func(ctx context.Context) (time.Duration, error) {
		renewals++
		if renewals > 2 {
			return 0, fmt.Errorf("job-7: %w", lease.ErrLeaseLost)
		}
		fmt.Println("renewal", renewals)
		return time.Second, nil
	}

	k := lease.NewKeeper(context.Background(), granted, sentAt, renew)
	defer k.Stop()

	// The job runs under k.Context(); here we just wait for the lease to go.
	<-k.Context().Done()
	fmt.Println("cause:", context.Cause(k.Context()))
	fmt.Println("lost:", errors.Is(context.Cause(k.Context()), lease.ErrLeaseLost))
	// Output:
	// renewal 1
	// renewal 2
	// cause: job-7: lease: lease lost
	// lost: true
}
