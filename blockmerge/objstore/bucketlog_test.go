package objstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/objstore/versitytest"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// The bucket log on a real S3 server: three coordinators append at once
// (conditional puts race for each index), and end with byte-identical
// replicas holding every block once.
func TestBucketLogOnS3(t *testing.T) {
	store, _ := versitytest.Start(t).ConditionalStore(t, 0)
	ctx := context.Background()
	cfg := raftfsm.DefaultConfig()
	var logs []*bucketlog.Log
	var svcs []*leader.Service
	for i := range 3 {
		fsm, err := raftfsm.New(cfg)
		require.NoError(t, err)
		l, err := bucketlog.Open(ctx, store, "compaction", fsm, fmt.Sprintf("c%d", i), bucketlog.WithCheckpointEvery(8))
		require.NoError(t, err)
		logs = append(logs, l)
		svcs = append(svcs, leader.New(l, fsm, leader.WithRetries(50, func(n int) time.Duration { return time.Duration(n%8+1) * time.Millisecond })))
	}
	var wg sync.WaitGroup
	for i, svc := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range 10 {
				_, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(fmt.Sprintf("seg-%d-%02d", i, b), "acme", uint32(i), int64(b)*1e9)})
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	var first []byte
	var conflicts uint64
	for i, l := range logs {
		require.NoError(t, l.Barrier(ctx))
		conflicts += l.Stats().Conflicts
		var b bytes.Buffer
		require.NoError(t, svcs[i].FSM().Snapshot(&b))
		if i == 0 {
			first = b.Bytes()
		} else {
			require.Equal(t, first, b.Bytes(), "replica %d", i)
		}
	}
	t.Logf("entries %d, conflicts %d", logs[0].Applied(), conflicts)
	view := svcs[0].FSM().Index()
	defer view.Close()
	require.Equal(t, 30, view.Len())
}

// BenchmarkBucketLogS3: polls through 1, 4 and 16 coordinators of one
// bucket log on a real S3 server (versitygw on loopback).
func BenchmarkBucketLogS3(b *testing.B) {
	bucketlogtest.CoordinatorsBenchmarks(b, s3Stores(b))
}

// BenchmarkBucketLogS3Ingest: the maximum append rate of one coordinator
// on the S3 server, with 1 and 16 writers (batched).
func BenchmarkBucketLogS3Ingest(b *testing.B) {
	bucketlogtest.IngestBenchmarks(b, s3Stores(b))
}

// BenchmarkBucketLogS3Fleet: 1, 4 and 16 workers on the S3 server,
// serverless (each its own node) and through one coordinator.
func BenchmarkBucketLogS3Fleet(b *testing.B) {
	bucketlogtest.FleetBenchmarks(b, s3Stores(b))
}

// s3Stores starts an S3 server and returns a function that makes a
// store over a new bucket of it.
func s3Stores(b *testing.B) func(b *testing.B) blockmerge.Store {
	v := versitytest.Start(b)
	return func(b *testing.B) blockmerge.Store {
		s, _ := v.ConditionalStore(b, 0)
		return s
	}
}

// faultProxy is an HTTP proxy on loopback in front of an S3 server.
// A conditional create (PUT with If-None-Match: *) of an object lose
// selects goes through to the server, which makes the object; its answer
// is lost — the proxy closes the connection instead — as when the network
// fails after the server applied a request. The S3 client retries on its
// own, and its retry finds the object: 412 Precondition Failed. While
// down is set, every request's connection is closed unanswered (an
// outage). Every other request passes through.
type faultProxy struct {
	pass *httputil.ReverseProxy
	to   *url.URL
	lose func(key string) bool
	down atomic.Bool

	mu        sync.Mutex
	lost      map[string]bool // keys whose create's answer was lost
	refused   map[string]int  // 412 answers to creates of those keys
	conflicts int             // 412 answers to creates of other keys
}

func newFaultProxy(server string, lose func(key string) bool) *faultProxy {
	to := &url.URL{Scheme: "http", Host: server}
	p := &faultProxy{to: to, lose: lose, lost: map[string]bool{}, refused: map[string]int{}}
	p.pass = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(to)
		r.Out.Host = r.In.Host // signed by the client
	}}
	return p
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.down.Load() {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
			return
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if r.Method != http.MethodPut || r.Header.Get("If-None-Match") != "*" {
		p.pass.ServeHTTP(w, r)
		return
	}
	key := r.URL.Path
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.to.Scheme, p.to.Host
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.mu.Lock()
	lose := resp.StatusCode == http.StatusOK && !p.lost[key] && p.lose(key)
	switch {
	case lose:
		p.lost[key] = true
	case resp.StatusCode == http.StatusPreconditionFailed && p.lost[key]:
		p.refused[key]++
	case resp.StatusCode == http.StatusPreconditionFailed:
		p.conflicts++
	}
	p.mu.Unlock()
	if lose {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
			return
		}
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// counts returns the creates whose answer was lost and, of those, the ones
// whose retry was refused with 412.
func (p *faultProxy) counts() (lost, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.lost {
		if p.refused[k] > 0 {
			refused++
		}
	}
	return len(p.lost), refused
}

// The bucket log on a real S3 server behind a proxy that lets every third
// create of a log entry, and every checkpoint's, through and loses its
// answer: the S3 client's own retry gets 412, and the log tells its own
// entry by the nonce. Every command is applied once and answered with
// that result — blocks added once (no duplicate), a job assigned once and
// cancelled once (not "unknown job") — checkpoints are written and not
// logged otherwise, and another coordinator starting on the bucket holds
// the same state.
func TestBucketLogLostCreateAnswersOnS3(t *testing.T) {
	ctx := context.Background()
	v := versitytest.Start(t)
	var creates int
	proxy := newFaultProxy(v.Endpoint(), func(key string) bool {
		if strings.Contains(key, "/checkpoint/") {
			return true
		}
		creates++
		return strings.Contains(key, "/log/") && creates%3 == 0
	})
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	via := v.Through(strings.TrimPrefix(front.URL, "http://"))
	store, _ := via.ConditionalStore(t, 0)

	cfg := bucketlogtest.Config()
	var logs bytes.Buffer
	applied := map[string]int{} // by command bytes
	fsm, err := raftfsm.New(cfg)
	require.NoError(t, err)
	l, err := bucketlog.Open(ctx, store, "compaction", fsm, "c1", bucketlog.WithCheckpointEvery(4),
		bucketlog.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		bucketlog.WithObserver(func(cmd []byte, a leader.Applied) { applied[string(cmd)]++ }))
	require.NoError(t, err)
	svc := leader.New(l, fsm)

	const adds = 12
	for i := range adds {
		res, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(fmt.Sprintf("seg-%02d", i), "acme", 0, int64(i)*1e9)})
		require.NoError(t, err)
		require.NoError(t, res[0].Err, "add %d: the block this very call added", i)
	}
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	require.Len(t, resp.Jobs, 1)
	_, err = svc.Propose(ctx, &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: resp.Jobs[0].Job}})
	require.NoError(t, err, "the cancel this very call applied")

	lost, refused := proxy.counts()
	t.Logf("answers lost %d, retries refused with 412 %d, entries %d", lost, refused, l.Applied())
	require.GreaterOrEqual(t, lost, 6, "the proxy lost the answers of creates")
	require.Equal(t, lost, refused, "each lost answer's retry was answered 412 by the server")
	// Configuration, took-office, the adds, the poll, the cancel: each
	// applied once, in an entry of its own.
	const commands = 2 + adds + 2
	require.Len(t, applied, commands)
	for _, n := range applied {
		require.Equal(t, 1, n, "a command applied twice")
	}
	require.Equal(t, uint64(commands), l.Stats().Appended)
	require.Zero(t, l.Stats().Conflicts)
	require.NotContains(t, logs.String(), "checkpoint not written")

	bucketlogtest.SameOnOpen(t, store, "compaction", cfg, l, fsm)
}

// A worker polls a bucket-log node on a real S3 server behind a proxy
// that goes down for longer than a lease while the worker's poll is out:
// the poll is retried through the outage and answered once the server is
// back, with an assignment whose lease, measured from the poll's first
// send, is over on arrival. The worker releases the job at once — it is
// not dropped to expire in the log and be charged "lease expired" — the
// job is assigned again and completes, with no failure charged.
func TestBucketLogOutageLongerThanLeaseOnS3(t *testing.T) {
	ctx := context.Background()
	v := versitytest.Start(t)
	proxy := newFaultProxy(v.Endpoint(), func(string) bool { return false })
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	store, _ := v.Through(strings.TrimPrefix(front.URL, "http://")).ConditionalStore(t, 0)

	const lease = 3 * time.Second
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	cfg.Scheduler.LeaseDuration = lease
	node, err := bucketlog.OpenNode(ctx, store, "compaction", "n1", bucketlog.NodeConfig{State: cfg})
	require.NoError(t, err)
	t.Cleanup(func() { _ = node.Close() })
	data := blockmerge.NewMemStore()
	var blocks []ck.BlockMeta
	for i := range 2 {
		id := fmt.Sprintf("seg-%d", i)
		meta, err := blockmerge.WriteBlock(ctx, data, blockmerge.BlockInfo{ID: id, Tenant: "acme"},
			[]blockmerge.Dataset{{Tenant: "acme", Name: "events", Records: []blockmerge.Record{{Key: []byte(id), Timestamp: 1, Value: []byte("v")}}}})
		require.NoError(t, err)
		blocks = append(blocks, meta)
	}
	_, err = node.AddBlocks(ctx, blocks)
	require.NoError(t, err)

	proxy.down.Store(true)
	w, err := worker.New(node, data, worker.Config{ID: "w1", Concurrency: 1, PollInterval: 50 * time.Millisecond, RetryBackoff: 100 * time.Millisecond})
	require.NoError(t, err)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	time.Sleep(lease + time.Second) // the worker's first poll is out through the outage
	proxy.down.Store(false)

	deadline := time.Now().Add(60 * time.Second)
	for w.Stats().JobsCompleted == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	require.NoError(t, <-done)
	st := w.Stats()
	t.Logf("worker: %+v", st)
	require.Equal(t, uint64(1), st.JobsCompleted, "the job completed")
	require.GreaterOrEqual(t, st.JobsReleased, uint64(1), "the late assignment was released")
	require.Zero(t, st.JobsLost, "no assignment dropped to expire")
	require.Zero(t, st.JobsFailed)
	require.NoError(t, node.Log.Barrier(ctx))
	c := node.FSM().Stats().Scheduler.Counters
	t.Logf("scheduler: %+v", c)
	require.Equal(t, uint64(1), c.Completed)
	require.GreaterOrEqual(t, c.Released, uint64(1))
	require.Zero(t, c.Reassigned, "no lease expired")
	require.Zero(t, c.Failed+c.Excluded)
}
