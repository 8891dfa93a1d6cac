package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// hostile is an in-process server over a real state machine, for the
// hostile-client suite: the attacker speaks HTTP to it, an honest worker
// keeps working beside.
type hostile struct {
	t   *testing.T
	fsm *raftfsm.FSM
	url string
	srv *httptest.Server
}

func newHostile(t *testing.T) *hostile {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 4
	f, err := raftfsm.New(cfg)
	require.NoError(t, err)
	svc := leader.New(leadertest.NewMemLog(f), f)
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = NewServer(NewHandler(svc, WithMaxBody(1<<20)))
	srv.Config.ReadTimeout = 300 * time.Millisecond // cut slow bodies off quickly in the test
	srv.Start()
	t.Cleanup(srv.Close)
	h := &hostile{t: t, fsm: f, url: srv.URL, srv: srv}
	var blocks []ck.BlockMeta
	for i := range 8 {
		blocks = append(blocks, leadertest.Block(fmt.Sprintf("seg-%d", i), "acme", uint32(i/4), int64(i)*1e9))
	}
	_, err = svc.AddBlocks(context.Background(), blocks)
	require.NoError(t, err)
	return h
}

func (h *hostile) snapshot() []byte {
	var b bytes.Buffer
	require.NoError(h.t, h.fsm.Snapshot(&b))
	return b.Bytes()
}

// post sends body to the poll endpoint and returns the status and body.
func (h *hostile) post(body []byte) (int, string) {
	resp, err := http.Post(h.url+PathPoll, "application/json", bytes.NewReader(body))
	require.NoError(h.t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func (h *hostile) poll(req *ck.PollRequest) *ck.PollResponse {
	body, err := json.Marshal(req)
	require.NoError(h.t, err)
	status, data := h.post(body)
	require.Equal(h.t, http.StatusOK, status, data)
	var resp ck.PollResponse
	require.NoError(h.t, json.Unmarshal([]byte(data), &resp))
	return &resp
}

// jobs returns the job table (public worker names), which a hostile
// report must leave as it is.
func (h *hostile) jobs() []ck.JobState {
	js, _ := h.fsm.Jobs(raftfsm.JobFilter{}, "", 0)
	return js
}

func TestHostileClients(t *testing.T) {
	h := newHostile(t)
	const honest = "honest-3QZ7B6K2JYV5OWTR4XNLE2MFHA"
	seq := uint64(1)
	job := h.poll(&ck.PollRequest{WorkerID: honest, Seq: seq, FreeSlots: 1}).Jobs[0]
	require.Equal(t, ck.OutcomeAssigned, job.Outcome)
	view := h.fsm.Index()
	live := view.Len()
	view.Close()

	// Reports that reach the log but own nothing: answered "no lease",
	// and the job table and the index are as they were.
	jobs := h.jobs()
	public := jobs[0].Worker
	outs := []ck.BlockMeta{leadertest.Block(ck.OutputID(job.Job, job.Token, 0), "acme", 0, 0)}
	outs[0].Level = 1
	for name, req := range map[string]*ck.PollRequest{
		"forged token": {WorkerID: "thief-AAAAAAAAAAAAAAAAAAAAAAAAAA", Seq: 1, Updates: []ck.StatusUpdate{
			{Job: job.Job, Token: job.Token + 1, Status: ck.ReportSuccess, Outputs: outs}}},
		"borrowed token": {WorkerID: "thief-BBBBBBBBBBBBBBBBBBBBBBBBBB", Seq: 1, Updates: []ck.StatusUpdate{
			{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: outs}}},
		"(job, token, worker) from Jobs": {WorkerID: public, Seq: 1, Updates: []ck.StatusUpdate{
			{Job: job.Job, Token: jobs[0].Token, Status: ck.ReportFailure}}},
	} {
		resp := h.poll(req)
		require.Equal(t, ck.OutcomeNoLease, resp.Jobs[0].Outcome, name)
		require.Equal(t, jobs, h.jobs(), name)
		view := h.fsm.Index()
		require.Equal(t, live, view.Len(), name)
		require.False(t, view.Live(outs[0].ID), name)
		view.Close()
	}

	// Another worker's identity (as shown: its public name) replayed with
	// the sequence walked forward: it reaches nothing of the worker's.
	for s := uint64(2); s <= 5; s++ {
		resp := h.poll(&ck.PollRequest{WorkerID: public, Seq: s})
		require.Empty(t, resp.Jobs)
	}
	rec, ok := h.fsm.Recorded(honest, 1)
	require.True(t, ok, "the honest worker's record is intact")
	require.Equal(t, job.Job, rec.Jobs[0].Job)

	// Requests refused before anything is proposed: the snapshot does not
	// change by a byte.
	before := h.snapshot()
	many := &ck.PollRequest{WorkerID: "thief-AAAAAAAAAAAAAAAAAAAAAAAAAA", Seq: 9}
	for i := range raftfsm.DefaultLimits.MaxReports + 1 {
		many.Updates = append(many.Updates, ck.StatusUpdate{Job: fmt.Sprintf("j%d", i), Token: 1, Status: ck.ReportInProgress})
	}
	overLimit, _ := json.Marshal(many)
	dup, _ := json.Marshal(&ck.PollRequest{WorkerID: "thief-AAAAAAAAAAAAAAAAAAAAAAAAAA", Seq: 9, Updates: []ck.StatusUpdate{
		{Job: job.Job, Token: job.Token, Status: ck.ReportInProgress}, {Job: job.Job, Token: job.Token, Status: ck.ReportInProgress}}})
	stale, _ := json.Marshal(&ck.PollRequest{WorkerID: public, Seq: 3}) // its latest is 5
	for name, c := range map[string]struct {
		body   []byte
		status int
		code   string
	}{
		"updates over the limit": {overLimit, http.StatusBadRequest, CodeInvalidRequest},
		"duplicated updates":     {dup, http.StatusBadRequest, CodeBadRequest},
		"oversized body":         {bytes.Repeat([]byte(" "), 2<<20), http.StatusBadRequest, CodeBadRequest},
		"malformed":              {[]byte(`{"WorkerID":`), http.StatusBadRequest, CodeBadRequest},
		"unknown field":          {[]byte(`{"WorkerID":"w","Seq":1,"Admin":true}`), http.StatusBadRequest, CodeBadRequest},
		"stale sequence":         {stale, http.StatusConflict, CodeStale},
	} {
		status, body := h.post(c.body)
		require.Equal(t, c.status, status, "%s: %s", name, body)
		require.Contains(t, body, `"code":"`+c.code+`"`, name)
		require.Equal(t, before, h.snapshot(), name)
	}

	// A body announced large and sent slowly: the server cuts it off and
	// keeps serving.
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"WorkerID\":", PathPoll)
	require.NoError(t, err)
	// The server answers once it gives up on the body (the deadline only
	// keeps a broken server from hanging the test).
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "400")
	conn.Close()
	require.Equal(t, before, h.snapshot(), "slow body")

	// A request whose client goes away mid-body: nothing is proposed.
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url+PathPoll, pr)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	_, err = pw.Write([]byte(`{"WorkerID":"thief-AAAAAAAAAAAAAAAAAAAAAAAAAA","Seq":10,`))
	require.NoError(t, err)
	cancel()
	// The transport waits for its body writer, which blocks reading the
	// pipe: end the body too, as a client process that dies would.
	pw.CloseWithError(context.Canceled)
	require.Error(t, <-done)
	require.Equal(t, before, h.snapshot(), "cancelled request")

	// The honest worker goes on: renews, then completes its job.
	seq++
	resp := h.poll(&ck.PollRequest{WorkerID: honest, Seq: seq, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportInProgress}}})
	require.Equal(t, ck.OutcomeRenewed, resp.Jobs[0].Outcome)
	outs = []ck.BlockMeta{leadertest.Block(ck.OutputID(job.Job, job.Token, 0), "acme", 0, 0)}
	outs[0].Level, outs[0].MaxTime, outs[0].Datasets[0].MaxTime = 1, 4e9, 4e9
	seq++
	resp = h.poll(&ck.PollRequest{WorkerID: honest, Seq: seq, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: outs}}})
	require.Equal(t, ck.OutcomeCompleted, resp.Jobs[0].Outcome)
}
