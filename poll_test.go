package compactkit_test

import (
	"fmt"
	"testing"

	ck "github.com/compactkit/compactkit"
)

// BenchmarkPollRequestValidate shows validation linear in the request:
// ns/update stays flat from 100 to 40,000 updates (a pairwise duplicate
// check made 40,000 updates cost 8 s).
func BenchmarkPollRequestValidate(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000, 40_000} {
		req := &ck.PollRequest{WorkerID: "w", Seq: 1}
		for i := range n {
			req.Updates = append(req.Updates, ck.StatusUpdate{Job: fmt.Sprintf("t.s0.l0.%d.0123456789abcdef", i), Token: 7, Status: ck.ReportInProgress})
		}
		b.Run(fmt.Sprintf("updates=%d", n), func(b *testing.B) {
			for b.Loop() {
				if err := req.Validate(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/update")
		})
	}
}

func TestPublicWorkerName(t *testing.T) {
	a, b := ck.PublicWorkerName("compactor-3QZ7B6K2JYV5OWTR4XNLE2MFHA"), ck.PublicWorkerName("compactor-AAAAB6K2JYV5OWTR4XNLE2MFHA")
	if a == b {
		t.Fatalf("two workers share the public name %s", a)
	}
	for _, name := range []string{a, b} {
		if len(name) != len("compactor~")+8 || name[:10] != "compactor~" {
			t.Errorf("public name %q: want compactor~ and 8 characters of hash", name)
		}
	}
	if got := ck.PublicWorkerName("compactor-3QZ7B6K2JYV5OWTR4XNLE2MFHA"); got != a {
		t.Errorf("not deterministic: %s then %s", a, got)
	}
	if ck.PublicWorkerName("") != "" {
		t.Error("empty ID")
	}
}
