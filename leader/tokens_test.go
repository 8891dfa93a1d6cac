package leader_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

var (
	key1 = leader.TokenKey{ID: "k1", Secret: bytes.Repeat([]byte{1}, 32)}
	key2 = leader.TokenKey{ID: "k2", Secret: bytes.Repeat([]byte{2}, 32)}
)

// signedCluster is a single-node log holding two batches, one per shard,
// for services with token keys.
func signedCluster(t *testing.T) (*raftfsm.FSM, *leadertest.MemLog) {
	_, f, log := newMemService(t, nil, append(acmePair(), leadertest.Block("seg-3", "acme", 1, 0), leadertest.Block("seg-4", "acme", 1, 1e9)))
	return f, log
}

// TestSignedTokens: with keys, assignments are signed; a report whose
// signature is missing, forged, made for another worker or by a key past
// its grace period never becomes a change ("no lease"); rotation across a
// leader change accepts every token the previous leader signed.
func TestSignedTokens(t *testing.T) {
	ctx := context.Background()
	f, log := signedCluster(t)
	old := leader.New(log, f, leader.WithTokenKeys(key1))
	const w1, w2 = "w1-AAAAAAAAAAAAAAAA", "w2-BBBBBBBBBBBBBBBB"
	resp, err := old.Poll(ctx, &ck.PollRequest{WorkerID: w1, Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	job := resp.Jobs[0]
	require.Equal(t, ck.OutcomeAssigned, job.Outcome)
	require.NotEmpty(t, job.Signature)
	rec, ok := f.Recorded(w1, 1)
	require.True(t, ok)
	require.Empty(t, rec.Jobs[0].Signature, "signatures are never in the replicated state")

	before, _, _ := f.Job(job.Job)
	report := func(svc *leader.Service, w string, seq uint64, sig []byte) ck.Outcome {
		t.Helper()
		resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: w, Seq: seq, Updates: []ck.StatusUpdate{
			{Job: job.Job, Token: job.Token, Status: ck.ReportInProgress, Signature: sig}}})
		require.NoError(t, err)
		require.Len(t, resp.Jobs, 1)
		return resp.Jobs[0].Outcome
	}
	forged := append([]byte{}, job.Signature...)
	forged[len(forged)-1] ^= 1
	require.Equal(t, ck.OutcomeNoLease, report(old, w1, 2, nil), "unsigned")
	require.Equal(t, ck.OutcomeNoLease, report(old, w1, 3, forged), "forged")
	require.Equal(t, ck.OutcomeNoLease, report(old, w2, 1, job.Signature), "another worker's signature")
	after, _, _ := f.Job(job.Job)
	require.Equal(t, before.Deadline, after.Deadline, "no refused report renewed the lease")
	require.Equal(t, before.Version, after.Version)

	// A new leader during rotation: k2 signs, k1 is still accepted.
	rotating := leader.New(log, f, leader.WithTokenKeys(key2, leader.TokenKey{ID: key1.ID, Secret: key1.Secret, NotAfter: time.Now().Add(time.Hour)}))
	require.Equal(t, ck.OutcomeRenewed, report(rotating, w1, 4, job.Signature))
	resp, err = rotating.Poll(ctx, &ck.PollRequest{WorkerID: w2, Seq: 2, FreeSlots: 1})
	require.NoError(t, err)
	require.Equal(t, ck.OutcomeAssigned, resp.Jobs[0].Outcome)
	require.Equal(t, byte(2), resp.Jobs[0].Signature[0])
	require.Equal(t, "k2", string(resp.Jobs[0].Signature[1:3]), "the signature names its key")

	// After the grace period the old key's signatures are refused.
	done := leader.New(log, f, leader.WithTokenKeys(key2, leader.TokenKey{ID: key1.ID, Secret: key1.Secret, NotAfter: time.Now().Add(-time.Second)}))
	require.Equal(t, ck.OutcomeNoLease, report(done, w1, 5, job.Signature))

	require.Panics(t, func() { leader.WithTokenKeys() })
	require.Panics(t, func() { leader.WithTokenKeys(leader.TokenKey{ID: "short", Secret: []byte("x")}) })
	require.Panics(t, func() { leader.WithTokenKeys(key1, key1) })
}

// failedHandler signals the first "job failed" record.
type failedHandler struct {
	slog.Handler
	failed chan slog.Record
}

func (h failedHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h failedHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "leader: job failed; it will be retried" {
		select {
		case h.failed <- r:
		default:
		}
	}
	return nil
}

// TestSignedTokensRealWorker: a real worker returns the signature with its
// reports. Its merge fails (the sources' objects do not exist): the
// failure is accepted — not answered "no lease" — and kept with its
// reason.
func TestSignedTokensRealWorker(t *testing.T) {
	f, log := signedCluster(t)
	h := failedHandler{Handler: slog.DiscardHandler, failed: make(chan slog.Record, 1)}
	svc := leader.New(log, f, leader.WithTokenKeys(key1), leader.WithLogger(slog.New(h)))
	w, err := worker.New(svc, blockmerge.NewMemStore(), worker.Config{Concurrency: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	r := <-h.failed
	cancel()
	<-done
	var job string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "job" {
			job = a.Value.String()
		}
		return true
	})
	js, _, ok := f.Job(job)
	require.True(t, ok)
	require.Positive(t, js.Failures)
	require.Contains(t, js.LastFailure, "seg-")
}
