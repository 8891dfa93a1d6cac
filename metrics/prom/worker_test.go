package prom_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/metrics/prom"
	"github.com/compactkit/compactkit/worker"
)

var workerStats = worker.Stats{
	Polls: 40, PollRetries: 3, BadResponses: 1, Rejections: 2, Renewals: 12,
	JobsAssigned: 11, JobsStarted: 10, JobsCompleted: 6, JobsFailed: 1, JobsReleased: 1, JobsLost: 1,
	TombstonesDeleted: 8, BlocksWritten: 6, BytesWritten: 6000,
	JobsHeld: 2, JobsRunning: 1,
}

func TestWorkerCollector(t *testing.T) {
	c := prom.NewWorkerCollector(func() worker.Stats { return workerStats })
	want := `
# HELP compactkit_worker_bad_responses_total Poll responses that failed validation and were ignored.
# TYPE compactkit_worker_bad_responses_total counter
compactkit_worker_bad_responses_total 1
# HELP compactkit_worker_blocks_written_total Output blocks written by merges that succeeded.
# TYPE compactkit_worker_blocks_written_total counter
compactkit_worker_blocks_written_total 6
# HELP compactkit_worker_jobs_assigned_total Jobs the leader assigned to the worker.
# TYPE compactkit_worker_jobs_assigned_total counter
compactkit_worker_jobs_assigned_total 11
# HELP compactkit_worker_jobs_ended_total Jobs that ended, by outcome: completed (success committed), failed (failure accepted), released (release accepted), lost (dropped without the leader accepting a report). Assigned = sum of ended + held.
# TYPE compactkit_worker_jobs_ended_total counter
compactkit_worker_jobs_ended_total{outcome="completed"} 6
compactkit_worker_jobs_ended_total{outcome="failed"} 1
compactkit_worker_jobs_ended_total{outcome="lost"} 1
compactkit_worker_jobs_ended_total{outcome="released"} 1
# HELP compactkit_worker_jobs_held Jobs the worker holds now: running, or ended with a report not yet answered.
# TYPE compactkit_worker_jobs_held gauge
compactkit_worker_jobs_held 2
# HELP compactkit_worker_jobs_running Jobs running now (including cancelled merges that have not returned yet).
# TYPE compactkit_worker_jobs_running gauge
compactkit_worker_jobs_running 1
# HELP compactkit_worker_jobs_started_total Jobs the worker started running.
# TYPE compactkit_worker_jobs_started_total counter
compactkit_worker_jobs_started_total 10
# HELP compactkit_worker_lease_renewals_total Leases the leader renewed at the request of the worker's lease keepers.
# TYPE compactkit_worker_lease_renewals_total counter
compactkit_worker_lease_renewals_total 12
# HELP compactkit_worker_poll_retries_total Poll requests that failed in transport and were sent again with the same sequence number.
# TYPE compactkit_worker_poll_retries_total counter
compactkit_worker_poll_retries_total 3
# HELP compactkit_worker_polls_total Poll requests answered by the leader.
# TYPE compactkit_worker_polls_total counter
compactkit_worker_polls_total 40
# HELP compactkit_worker_rejected_requests_total Poll requests the leader rejected as invalid.
# TYPE compactkit_worker_rejected_requests_total counter
compactkit_worker_rejected_requests_total 2
# HELP compactkit_worker_tombstones_deleted_total Tombstones whose objects the worker deleted.
# TYPE compactkit_worker_tombstones_deleted_total counter
compactkit_worker_tombstones_deleted_total 8
# HELP compactkit_worker_written_bytes_total Bytes of the output blocks written by merges that succeeded.
# TYPE compactkit_worker_written_bytes_total counter
compactkit_worker_written_bytes_total 6000
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want)))
	require.Equal(t, 16, testutil.CollectAndCount(c))

	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func TestWorkerCollectorSeveralWorkers(t *testing.T) {
	other := workerStats
	other.Polls = 5
	reg, mfs := gather(t,
		prom.NewWorkerCollector(func() worker.Stats { return workerStats }, prom.WithConstLabels(prometheus.Labels{"worker": "a"})),
		prom.NewWorkerCollector(func() worker.Stats { return other }, prom.WithConstLabels(prometheus.Labels{"worker": "b"})),
	)
	require.Equal(t, 40.0, value(t, mfs, "compactkit_worker_polls_total", "worker=a"))
	require.Equal(t, 5.0, value(t, mfs, "compactkit_worker_polls_total", "worker=b"))
	require.Equal(t, 6.0, value(t, mfs, "compactkit_worker_jobs_ended_total", "outcome=completed", "worker=b"))
	n, err := testutil.GatherAndCount(reg, "compactkit_worker_jobs_ended_total")
	require.NoError(t, err)
	require.Equal(t, 8, n)
}

func TestWorkerCollectorNoStats(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prom.NewWorkerCollector(nil)))
	_, err := reg.Gather()
	require.ErrorIs(t, err, prom.ErrNoStats)
}

// idleLeader answers every poll with no job; it closes polled on the
// first one.
type idleLeader struct {
	once   sync.Once
	polled chan struct{}
}

func (l *idleLeader) Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	l.once.Do(func() { close(l.polled) })
	return &ck.PollResponse{}, nil
}

// The collector reads a real worker's Stats.
func TestWorkerCollectorRealWorker(t *testing.T) {
	leader := &idleLeader{polled: make(chan struct{})}
	w, err := worker.New(leader, blockmerge.NewMemStore(), worker.Config{Concurrency: 1})
	require.NoError(t, err)
	c := prom.NewWorkerCollector(w.Stats, prom.WithConstLabels(prometheus.Labels{"worker": w.ID()}))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-leader.polled
	cancel()
	<-done

	st := w.Stats()
	require.GreaterOrEqual(t, st.Polls, uint64(1))
	_, mfs := gather(t, c)
	require.Equal(t, float64(st.Polls), value(t, mfs, "compactkit_worker_polls_total", "worker="+w.ID()))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_worker_jobs_held", "worker="+w.ID()))
}
