package raftfsm

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// TestAnswers: the answers about a job are the changes a scan of every
// change finds for it — the poll's worker's applied renewals,
// completions, failures and releases of the job — in change order.
func TestAnswers(t *testing.T) {
	kinds := []ck.ChangeKind{ck.ChangeAdd, ck.ChangeAssign, ck.ChangeRenew, ck.ChangeComplete, ck.ChangeFail, ck.ChangeRelease}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(t, "changes")
		p := &Poll{WorkerID: "w"}
		results := make([]scheduler.Result, n)
		for i := range n {
			p.Update.Changes = append(p.Update.Changes, ck.Change{
				Job:    rapid.SampledFrom([]string{"a", "b", "bb", "c"}).Draw(t, "job"),
				Worker: rapid.SampledFrom([]string{"w", "x"}).Draw(t, "worker"),
			})
			results[i] = scheduler.Result{Applied: rapid.Bool().Draw(t, "applied"), Kind: rapid.SampledFrom(kinds).Draw(t, "kind")}
		}
		a := answersOf(p, results)
		for _, job := range []string{"", "a", "b", "bb", "c", "d"} {
			var want []int
			for i, c := range p.Update.Changes {
				r := results[i]
				switch r.Kind {
				case ck.ChangeRenew, ck.ChangeComplete, ck.ChangeFail, ck.ChangeRelease:
					if c.Job == job && c.Worker == p.WorkerID && r.Applied {
						want = append(want, i)
					}
				}
			}
			require.Equal(t, want, append([]int(nil), a.of(job)...), "job %q", job)
		}
	})
}
