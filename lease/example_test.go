package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/compactkit/compactkit/lease"
)

func ExampleGrant() {
	const second = int64(time.Second)
	now := 100 * second // log time of the entry that assigns the job

	l := lease.Grant(now, 42, 15*time.Second)
	fmt.Println("deadline:", l.Deadline/second)
	fmt.Println("expired at 115s:", l.Expired(115*second)) // the lease holds at its deadline
	fmt.Println("expired at 116s:", l.Expired(116*second))
	fmt.Println("remaining at 110s:", l.Remaining(110*second))

	// Renewed at 110s: 110s + 15s.
	l = l.Renew(110*second, 15*time.Second)
	fmt.Println("renewed deadline:", l.Deadline/second)

	// A renewal never shortens the lease.
	l = l.Renew(111*second, time.Second)
	fmt.Println("after a short renewal:", l.Deadline/second)
	// Output:
	// deadline: 115
	// expired at 115s: false
	// expired at 116s: true
	// remaining at 110s: 5s
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

// stepClock is a lease.Clock whose timers fire at once, moving its time
// forward: it lets the example run instantly and deterministically.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) NewTimer(d time.Duration) lease.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	ch := make(chan time.Time, 1)
	ch <- c.now
	return firedTimer(ch)
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (firedTimer) Stop() bool            { return false }

func ExampleKeeper() {
	clock := &stepClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}

	// The worker sent the poll that got it the job, with a 15s lease.
	sentAt := clock.Now()
	granted := 15 * time.Second

	// renew asks the leader to renew the lease. Here the leader renews it
	// twice, then answers "no lease" (the job was reassigned, say).
	renewals := 0
	renew := func(ctx context.Context) (time.Duration, error) {
		renewals++
		if renewals > 2 {
			return 0, fmt.Errorf("job-7: %w", lease.ErrLeaseLost)
		}
		fmt.Println("renewed after", clock.Now().Sub(sentAt))
		return 15 * time.Second, nil
	}

	k := lease.NewKeeper(context.Background(), granted, sentAt, renew, lease.WithClock(clock))
	defer k.Stop()

	// The job runs under k.Context(); here we just wait for the lease to go.
	<-k.Context().Done()
	fmt.Println("local deadline when lost:", k.Deadline().Sub(sentAt))
	fmt.Println("cause:", k.Err())
	fmt.Println("lost:", errors.Is(k.Err(), lease.ErrLeaseLost))
	// Output:
	// renewed after 7.5s
	// renewed after 15s
	// local deadline when lost: 30s
	// cause: job-7: lease: lease lost
	// lost: true
}
