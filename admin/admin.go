package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// defaultMaxBody bounds a request body, by default.
const defaultMaxBody = 1 << 20

// Authorizer decides whether the request may perform the action; a non-nil
// error refuses it with 403 and the error's message. It is where a host
// checks its own credentials. The actions are the reads "status", "jobs",
// "job", "tenants", "quarantine", "dry-run", "fsck" and "policies", and the
// commands "pause", "resume", "retry", "cancel", "requeue", "mark",
// "set-max-failures", "fsck-remove", "policy-set", "policy-clear" and
// "compact-now".
type Authorizer func(r *http.Request, action string) error

// Option configures a [Handler].
type Option func(*Handler)

// WithAuthorizer enables the operator commands, each authorized by a; it
// also authorizes every read.
func WithAuthorizer(a Authorizer) Option { return func(h *Handler) { h.auth = a } }

// WithIdentity names the caller of a command (an operator's login, a
// certificate's subject): the name travels in the log with the command
// (raftfsm.Operator.By), so every replica logs who issued it. Without it
// commands carry no name.
func WithIdentity(who func(r *http.Request) string) Option {
	return func(h *Handler) { h.identity = who }
}

// WithMaxBody sets the largest request body accepted (default 1 MiB).
func WithMaxBody(n int64) Option {
	return func(h *Handler) {
		if n > 0 {
			h.maxBody = n
		}
	}
}

// WithLogger sets the handler's logger (default: discard). Every command
// is logged at info with its action, arguments and the caller's address.
func WithLogger(l *slog.Logger) Option {
	return func(h *Handler) {
		if l != nil {
			h.log = l
		}
	}
}

// Handler serves the API under /api/ and the status page at the root of
// wherever it is mounted (strip the mount prefix with http.StripPrefix).
type Handler struct {
	svc      *leader.Service
	auth     Authorizer
	maxBody  int64
	log      *slog.Logger
	mux      *http.ServeMux
	store    blockmerge.Store
	layout   blockmerge.Layout
	identity func(r *http.Request) string
	hosts    map[string]bool

	mu      sync.Mutex
	history []sample // backlog over time, for the page's chart
}

// sample is the backlog at one moment.
type sample struct {
	at     time.Time
	queued int
	jobs   int
}

// historyLen bounds the samples kept, historyEvery spaces them.
const (
	historyLen   = 240
	historyEvery = 5 * time.Second
)

// New returns the admin handler over svc.
func New(svc *leader.Service, opts ...Option) *Handler {
	h := &Handler{svc: svc, maxBody: defaultMaxBody, log: slog.New(slog.DiscardHandler)}
	WithAllowedHosts("localhost")(h)
	for _, o := range opts {
		o(h)
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /api/status", h.read("status", h.status))
	m.HandleFunc("GET /api/jobs", h.read("jobs", h.jobs))
	m.HandleFunc("GET /api/jobs/{name}", h.read("job", h.job))
	m.HandleFunc("GET /api/tenants", h.read("tenants", h.tenants))
	m.HandleFunc("GET /api/quarantine", h.read("quarantine", h.quarantine))
	m.HandleFunc("GET /api/dry-run", h.read("dry-run", h.dryRun))
	m.HandleFunc("GET /api/fsck", h.read("fsck", h.fsck))
	m.HandleFunc("GET /api/policies", h.read("policies", h.policies))
	m.HandleFunc("POST /api/fsck/remove", h.fsckRemove)
	m.HandleFunc("POST /api/commands/{action}", h.command)
	m.HandleFunc("/api/commands/{action}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, fmt.Errorf("%s: commands are POST requests", r.Method))
	})
	m.HandleFunc("GET /{$}", h.page)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	h.mux = m
	return h
}

// ServeHTTP implements http.Handler: every response forbids framing and
// content sniffing, and a request to a host not allowed
// ([WithAllowedHosts]) is refused with 403 before anything else.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w)
	if !h.hostAllowed(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(errorBody{Code: hostsCode,
			Error: fmt.Sprintf("host %q is not one this handler serves (allow it with admin.WithAllowedHosts)", r.Host)})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.maxBody)
	h.mux.ServeHTTP(w, r)
}

// errorBody is the JSON of every error; Code, when set, names what to
// change to be served.
type errorBody struct {
	Error      string `json:"error"`
	Code       string `json:"code,omitempty"`
	LeaderID   string `json:"leader_id,omitempty"`
	LeaderAddr string `json:"leader_addr,omitempty"`
}

// badRequest marks an error of the caller's input.
type badRequest struct{ error }

func (e badRequest) Unwrap() error { return e.error }

func badf(format string, args ...any) error { return badRequest{fmt.Errorf(format, args...)} }

// fail answers err with its status code: the handler's own cases first
// (a body too large, a malformed request, an absent resource), then the
// class of the error (leader.Classify).
func fail(w http.ResponseWriter, err error) {
	var nl *leader.NotLeaderError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, err)
		return
	case errors.As(err, new(badRequest)):
		writeError(w, http.StatusBadRequest, err)
		return
	case errors.As(err, new(notFound)):
		writeError(w, http.StatusNotFound, err)
		return
	}
	switch leader.Classify(err) {
	case leader.Invalid:
		writeError(w, http.StatusBadRequest, err)
	case leader.Conflict:
		writeError(w, http.StatusConflict, err)
	case leader.NotLeader:
		if !errors.As(err, &nl) || nl.LeaderID == "" && nl.LeaderAddr == "" {
			writeError(w, http.StatusServiceUnavailable, err) // no leader known to send the caller to
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMisdirectedRequest)
		_ = json.NewEncoder(w).Encode(errorBody{Error: err.Error(), LeaderID: nl.LeaderID, LeaderAddr: nl.LeaderAddr})
	case leader.Unavailable:
		writeError(w, http.StatusServiceUnavailable, err)
	default:
		writeError(w, http.StatusInternalServerError, err)
	}
}

func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(errorBody{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// authorize runs the authorizer, if any.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request, action string) bool {
	if h.auth == nil {
		return true
	}
	if err := h.auth(r, action); err != nil {
		writeError(w, http.StatusForbidden, fmt.Errorf("%s: %w", action, err))
		return false
	}
	return true
}

// read wraps a read endpoint: authorization, then f's value as JSON.
func (h *Handler) read(action string, f func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.authorize(w, r, action) {
			return
		}
		v, err := f(r)
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, v)
	}
}

// Level is one level's backlog.
type Level struct {
	Level        uint32 `json:"level"`
	Queued       int    `json:"queued"`
	Claimed      int    `json:"claimed"`
	ReadyBatches int    `json:"ready_batches"`
	Lag          string `json:"lag"`
	DebtBlockSec int64  `json:"debt_block_seconds"`
}

// Status is the summary of /api/status.
type Status struct {
	// LeaderID is the ID of the node that leads (the one answering).
	LeaderID       string         `json:"leader_id"`
	Term           uint64         `json:"term"`
	LastApplied    uint64         `json:"last_applied"`
	LogTime        string         `json:"log_time"`
	ClusterVersion int            `json:"cluster_version"`
	Failed         string         `json:"failed,omitempty"`
	Workers        int            `json:"workers"`
	Levels         []Level        `json:"levels"`
	Queued         int            `json:"queued"`
	Claimed        int            `json:"claimed"`
	Quarantined    int            `json:"quarantined"`
	Jobs           map[string]int `json:"jobs"`
	Tombstones     int            `json:"tombstones"`
	Drained        bool           `json:"drained"`
	Paused         []string       `json:"paused"`
	Completed      uint64         `json:"completed_total"`
	Failures       uint64         `json:"failed_total"`
	Excluded       uint64         `json:"excluded_total"`
	// Pressure lists the tenants whose backpressure grade is not ok.
	Pressure []TenantGrade `json:"pressure"`
	// ShardPressure lists the shards whose backpressure grade is not ok
	// (policies' shard_pressure).
	ShardPressure []ShardGrade `json:"shard_pressure"`
	// Alarms lists the staleness alarms in force.
	Alarms []StaleAlarm `json:"alarms"`
}

// TenantGrade is a tenant's backpressure grade: "slow" or "stop" (what its
// ingest should do; tenants not listed are "ok").
type TenantGrade struct {
	Tenant string `json:"tenant"`
	Grade  string `json:"grade"`
}

// ShardGrade is a shard's backpressure grade, "slow" or "stop" (shard
// 4294967295 holds the keys of levels compacted across shards).
type ShardGrade struct {
	Tenant string `json:"tenant"`
	Shard  uint32 `json:"shard"`
	Grade  string `json:"grade"`
}

// StaleAlarm says that a tenant's level has not been compacted for longer
// than its policy's stale_after: its oldest queued block arrived at
// Oldest, the alarm holds since Since, and For is how long that is at the
// log's time.
type StaleAlarm struct {
	Tenant string `json:"tenant"`
	Level  uint32 `json:"level"`
	Oldest string `json:"oldest"`
	Since  string `json:"since"`
	For    string `json:"for"`
}

// duration shows a duration to the millisecond.
func duration(d time.Duration) string { return d.Round(time.Millisecond).String() }

// TenantName is how the status page and compactctl show a tenant: its
// name, or "(multi-tenant)" for the empty tenant, whose blocks are the
// multi-tenant level-0 segments. The JSON keeps the name itself ("").
func TenantName(tenant string) string {
	if tenant == "" {
		return "(multi-tenant)"
	}
	return tenant
}

func logTime(ns int64) string {
	if ns == 0 {
		return ""
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

func (h *Handler) statusOf(ctx context.Context) (*Status, error) {
	f, err := h.svc.Read(ctx)
	if err != nil {
		return nil, err
	}
	st := f.Stats()
	s := &Status{
		LeaderID: h.svc.Leader().LeaderID, Term: st.Term, LastApplied: st.LastApplied, LogTime: logTime(st.Now),
		ClusterVersion: int(st.ClusterVersion), Workers: st.Workers,
		Queued: st.Planner.Queued, Claimed: st.Planner.Claimed, Quarantined: st.Planner.Quarantined,
		Jobs: map[string]int{}, Tombstones: st.Tombstones, Drained: st.Drained(), Paused: []string{},
		Completed: st.Scheduler.Counters.Completed, Failures: st.Scheduler.Counters.Failed, Excluded: st.Scheduler.Counters.Excluded,
	}
	if st.Failed != nil {
		s.Failed = st.Failed.Error()
	}
	s.Pressure, s.ShardPressure, s.Alarms = []TenantGrade{}, []ShardGrade{}, []StaleAlarm{}
	for _, p := range st.Pressure {
		s.Pressure = append(s.Pressure, TenantGrade{Tenant: p.Tenant, Grade: p.Grade.String()})
	}
	for _, p := range st.ShardPressure {
		s.ShardPressure = append(s.ShardPressure, ShardGrade{Tenant: p.Tenant, Shard: p.Shard, Grade: p.Grade.String()})
	}
	for _, a := range st.Alarms {
		s.Alarms = append(s.Alarms, StaleAlarm{Tenant: a.Tenant, Level: a.Level, Oldest: logTime(a.Oldest), Since: logTime(a.Since),
			For: duration(time.Duration(max(st.Now-a.Since, 0)))})
	}
	for _, lv := range st.Planner.Levels {
		s.Levels = append(s.Levels, Level{Level: lv.Level, Queued: lv.Queued, Claimed: lv.Claimed, ReadyBatches: lv.ReadyBatches, Lag: duration(lv.Lag), DebtBlockSec: lv.Debt})
	}
	for _, lv := range st.Scheduler.Levels {
		s.Jobs[ck.StatusUnassigned.String()] += lv.Unassigned
		s.Jobs[ck.StatusInProgress.String()] += lv.InProgress
		s.Jobs[ck.StatusExcluded.String()] += lv.Excluded
	}
	for _, p := range st.Scheduler.Paused {
		tenant, level := TenantName(p.Tenant), strconv.FormatUint(uint64(p.Level), 10)
		if p.AllTenants {
			tenant = "every tenant"
		}
		if p.AllLevels {
			level = "every level"
		} else {
			level = "level " + level
		}
		s.Paused = append(s.Paused, tenant+" at "+level)
	}
	h.record(s)
	return s, nil
}

// record keeps a backlog sample for the page's chart, at most one per
// historyEvery.
func (h *Handler) record(s *Status) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.history); n > 0 && now.Sub(h.history[n-1].at) < historyEvery {
		return
	}
	jobs := 0
	for _, n := range s.Jobs {
		jobs += n
	}
	h.history = append(h.history, sample{at: now, queued: s.Queued, jobs: jobs})
	if len(h.history) > historyLen {
		h.history = h.history[len(h.history)-historyLen:]
	}
}

func (h *Handler) status(r *http.Request) (any, error) { return h.statusOf(r.Context()) }

// Job is a job as the API shows it.
type Job struct {
	Name        string   `json:"name"`
	Tenant      string   `json:"tenant"`
	Level       uint32   `json:"level"`
	Status      string   `json:"status"`
	Token       uint64   `json:"token"`
	Worker      string   `json:"worker,omitempty"`
	Deadline    string   `json:"deadline,omitempty"`
	AddedAt     string   `json:"added_at"`
	Failures    uint32   `json:"failures"`
	LastFailure string   `json:"last_failure,omitempty"`
	FailedAt    string   `json:"failed_at,omitempty"`
	Sources     []string `json:"sources,omitempty"`
	Tombstones  []string `json:"tombstones,omitempty"`
	Shard       *uint32  `json:"shard,omitempty"`
	History     []Event  `json:"history,omitempty"`
}

// Event is an event of a job's history.
type Event struct {
	At     string `json:"at"`
	Kind   string `json:"kind"`
	Token  uint64 `json:"token,omitempty"`
	Worker string `json:"worker,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func jobOf(js ck.JobState) Job {
	j := Job{Name: js.Name, Tenant: js.Tenant, Level: js.Level, Status: js.Status.String(), Token: uint64(js.Token),
		Worker: js.Worker, AddedAt: logTime(js.AddedAt), Failures: js.Failures, LastFailure: js.LastFailure, FailedAt: logTime(js.FailedAt)}
	if js.Status == ck.StatusInProgress {
		j.Deadline = logTime(js.Deadline)
	}
	for _, ev := range js.History {
		j.History = append(j.History, Event{At: logTime(ev.At), Kind: ev.Kind.String(), Token: uint64(ev.Token), Worker: ev.Worker, Detail: ev.Detail})
	}
	return j
}

// JobPage is a page of jobs; Next is the cursor of the next page ("" at
// the end).
type JobPage struct {
	Jobs []Job  `json:"jobs"`
	Next string `json:"next"`
}

func parseStatus(s string) (ck.JobStatus, error) {
	for st := ck.JobStatus(1); st < 16; st++ {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, badf("unknown status %q", s)
}

func queryInt(q url.Values, name string, max int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > max {
		return 0, badf("%s %q: want an integer from 0 to %d", name, v, max)
	}
	return n, nil
}

func (h *Handler) jobs(r *http.Request) (any, error) {
	q := r.URL.Query()
	var flt scheduler.Filter
	if q.Has("tenant") {
		t := q.Get("tenant")
		flt.Tenant = &t
	}
	if q.Has("level") {
		l, err := queryInt(q, "level", 255)
		if err != nil {
			return nil, err
		}
		lv := uint32(l)
		flt.Level = &lv
	}
	if s := q.Get("status"); s != "" {
		st, err := parseStatus(s)
		if err != nil {
			return nil, err
		}
		flt.Status = st
	}
	limit, err := queryInt(q, "limit", scheduler.MaxListLimit)
	if err != nil {
		return nil, err
	}
	cursor := q.Get("cursor")
	f, err := h.svc.Read(r.Context())
	if err != nil {
		return nil, err
	}
	jobs, next := f.Jobs(flt, cursor, limit)
	if cursor != "" && !scheduler.ValidCursor(cursor) {
		return nil, badf("cursor %q is not one this API returned", cursor)
	}
	page := JobPage{Jobs: []Job{}, Next: next}
	for _, js := range jobs {
		page.Jobs = append(page.Jobs, jobOf(js))
	}
	return page, nil
}

func (h *Handler) job(r *http.Request) (any, error) {
	name := r.PathValue("name")
	if err := ident.ValidateJobName(name); err != nil {
		return nil, badRequest{err}
	}
	f, err := h.svc.Read(r.Context())
	if err != nil {
		return nil, err
	}
	js, plan, ok := f.Job(name)
	if !ok {
		return nil, notFound{fmt.Errorf("no job %q", name)}
	}
	j := jobOf(js)
	j.Sources = plan.Sources
	shard := plan.Shard
	j.Shard = &shard
	for _, t := range plan.Tombstones {
		j.Tombstones = append(j.Tombstones, t.String())
	}
	return j, nil
}

// notFound marks an absent resource.
type notFound struct{ error }

func (e notFound) Unwrap() error { return e.error }

// Tenant is one tenant's backlog at one level.
type Tenant struct {
	Tenant       string `json:"tenant"`
	Level        uint32 `json:"level"`
	Queued       int    `json:"queued"`
	ReadyBatches int    `json:"ready_batches"`
	Oldest       string `json:"oldest"`
	Lag          string `json:"lag"`
	DebtBlockSec int64  `json:"debt_block_seconds"`
}

func (h *Handler) tenants(r *http.Request) (any, error) {
	if _, err := h.svc.Read(r.Context()); err != nil { // on the leader, up to date
		return nil, err
	}
	return h.tenantRows(-1), nil
}

// tenantRows returns the tenants' backlogs, at most limit of them (all
// when limit < 0).
func (h *Handler) tenantRows(limit int) []Tenant {
	out := []Tenant{}
	for _, t := range h.svc.FSM().Tenants() {
		if len(out) == limit {
			break
		}
		out = append(out, Tenant{Tenant: t.Tenant, Level: t.Level, Queued: t.Queued, ReadyBatches: t.ReadyBatches,
			Oldest: logTime(t.Oldest), Lag: duration(t.Lag), DebtBlockSec: t.Debt})
	}
	return out
}

// Quarantined is a quarantined block.
type Quarantined struct {
	ID      string `json:"id"`
	Tenant  string `json:"tenant"`
	Shard   uint32 `json:"shard"`
	Level   uint32 `json:"level"`
	Job     string `json:"job"`
	Reason  string `json:"reason"`
	Since   string `json:"since"`
	Arrived string `json:"arrived"`
	Size    int64  `json:"size"`
}

// QuarantinePage is a page of quarantined blocks.
type QuarantinePage struct {
	Blocks []Quarantined `json:"blocks"`
	Next   string        `json:"next"`
}

func (h *Handler) quarantine(r *http.Request) (any, error) {
	limit, err := queryInt(r.URL.Query(), "limit", 10000)
	if err != nil {
		return nil, err
	}
	f, err := h.svc.Read(r.Context())
	if err != nil {
		return nil, err
	}
	blocks, next := f.Quarantined(r.URL.Query().Get("cursor"), limit)
	page := QuarantinePage{Blocks: []Quarantined{}, Next: next}
	for _, b := range blocks {
		page.Blocks = append(page.Blocks, Quarantined{ID: b.ID, Tenant: b.Tenant, Shard: b.Shard, Level: b.Level, Job: b.Job,
			Reason: b.Reason, Since: logTime(b.Since), Arrived: logTime(b.Arrived), Size: b.Size})
	}
	return page, nil
}

// Planned is a change a dry run would make.
type Planned struct {
	Change  string   `json:"change"`
	Job     string   `json:"job"`
	Tenant  string   `json:"tenant,omitempty"`
	Level   uint32   `json:"level"`
	Sources []string `json:"sources,omitempty"`
	Cleanup int      `json:"tombstones,omitempty"`
}

// dryRunWorker is the worker a dry run prepares a poll for; nothing is
// ever recorded under it.
const dryRunWorker = "admin-dry-run"

func (h *Handler) dryRun(r *http.Request) (any, error) {
	slots, err := queryInt(r.URL.Query(), "slots", 1<<16)
	if err != nil {
		return nil, err
	}
	if slots == 0 {
		slots = 1
	}
	if _, err := h.svc.Read(r.Context()); err != nil { // on the leader, up to date
		return nil, err
	}
	f := h.svc.FSM()
	_, _, now := f.LastApplied()
	// Prepare is read-only: it plans on copy-on-write views and returns
	// the command it would propose, which is dropped.
	cmd, err := f.Prepare(&ck.PollRequest{WorkerID: dryRunWorker, Seq: 1 << 62, FreeSlots: int32(slots)}, now)
	if err != nil {
		return nil, err
	}
	out := []Planned{}
	plans := map[string]*ck.JobPlan{}
	for _, c := range cmd.Poll.Update.Changes {
		p := Planned{Change: c.Kind.String(), Job: c.Job}
		if c.Plan != nil {
			plans[c.Job] = c.Plan
		}
		if plan := plans[c.Job]; plan != nil {
			p.Tenant, p.Level, p.Sources, p.Cleanup = plan.Tenant, plan.Level, plan.Sources, len(plan.Tombstones)
		} else if js, plan, ok := f.Job(c.Job); ok {
			p.Tenant, p.Level, p.Sources, p.Cleanup = js.Tenant, js.Level, plan.Sources, len(plan.Tombstones)
		}
		out = append(out, p)
	}
	return out, nil
}

// Command is the body of a command: the fields its action reads. pause
// and resume name exactly one of Tenant (a pointer, because "tenant": ""
// names the empty tenant of multi-tenant segments) and All, and
// optionally a Level; the other actions take none of the three.
type Command struct {
	Tenant *string `json:"tenant,omitempty"`
	// All pauses or resumes every tenant.
	All         bool     `json:"all,omitempty"`
	Level       *uint32  `json:"level,omitempty"`
	Job         string   `json:"job,omitempty"`
	MaxFailures *uint32  `json:"max_failures,omitempty"`
	Blocks      []string `json:"blocks,omitempty"`
	// Reason says why blocks are marked (mark only).
	Reason string `json:"reason,omitempty"`
}

// oneTenant checks that a command names exactly one of a tenant and every
// tenant.
func oneTenant(name string, tenant *string, all bool) error {
	if (tenant != nil) == all {
		return badf(`%s: name a tenant ("tenant") or every tenant ("all": true), not both`, name)
	}
	return nil
}

// operator converts the body of an operator command; its errors are the
// caller's (400).
func (c *Command) operator(name string, action raftfsm.OperatorAction) (raftfsm.Operator, error) {
	op := raftfsm.Operator{Action: action, All: c.All, Level: c.Level, Job: c.Job, Blocks: c.Blocks, Reason: c.Reason}
	switch {
	case action == raftfsm.OpPause || action == raftfsm.OpResume:
		if err := oneTenant(name, c.Tenant, c.All); err != nil {
			return op, err
		}
		if c.Tenant != nil {
			op.Tenant = *c.Tenant
		}
	case c.Tenant != nil || c.All || c.Level != nil:
		return op, badf("%s: tenant, all and level are for pause and resume", name)
	}
	if action == raftfsm.OpSetMaxFailures {
		if c.MaxFailures == nil {
			return op, badf("set-max-failures: max_failures is required")
		}
		op.MaxFailures = *c.MaxFailures
	}
	return op, nil
}

// CommandResult is the answer to a command.
type CommandResult struct {
	Action    string   `json:"action"`
	Index     uint64   `json:"index"`
	Count     int      `json:"count"`
	Cancelled []string `json:"cancelled,omitempty"`
}

var actions = map[string]raftfsm.OperatorAction{
	"pause": raftfsm.OpPause, "resume": raftfsm.OpResume, "retry": raftfsm.OpRetry,
	"cancel": raftfsm.OpCancel, "requeue": raftfsm.OpRequeue, "set-max-failures": raftfsm.OpSetMaxFailures,
	"mark": raftfsm.OpMark,
}

// commandAllowed checks what every command needs: an authorizer that
// allows it, the handler's own origin, a JSON body.
func (h *Handler) commandAllowed(w http.ResponseWriter, r *http.Request, name string) bool {
	if h.auth == nil {
		writeError(w, http.StatusForbidden, errReadOnly)
		return false
	}
	if err := sameOrigin(r); err != nil {
		writeError(w, http.StatusForbidden, err)
		return false
	}
	if err := jsonBody(r); err != nil {
		writeError(w, http.StatusUnsupportedMediaType, err)
		return false
	}
	return h.authorize(w, r, name)
}

// decodeBody decodes exactly one JSON value with known fields into v.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest{fmt.Errorf("body: %w", err)}
	}
	if dec.More() {
		return badf("body: more than one JSON value")
	}
	return nil
}

func (h *Handler) command(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("action")
	if pa, ok := policyActions[name]; ok {
		h.policyCommand(w, r, name, pa)
		return
	}
	action, ok := actions[name]
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Errorf("unknown action %q", name))
		return
	}
	var c Command
	h.propose(w, r, name, &c, func(by string) (*raftfsm.Command, []any, error) {
		op, err := c.operator(name, action)
		if err != nil {
			return nil, nil, err
		}
		op.By = by
		return &raftfsm.Command{Operator: &op}, []any{"tenant", op.Tenant, "all", op.All, "job", c.Job, "blocks", len(c.Blocks)}, nil
	})
}

// propose answers the request for the command name once the caller may
// run it: it decodes the body into body, builds the command with build
// (given the caller's identity, "" without WithIdentity), proposes it,
// logs it with the attributes build returns and writes its result. An
// error of build is the caller's.
func (h *Handler) propose(w http.ResponseWriter, r *http.Request, name string, body any, build func(by string) (*raftfsm.Command, []any, error)) {
	if !h.commandAllowed(w, r, name) {
		return
	}
	if err := decodeBody(r, body); err != nil {
		fail(w, err)
		return
	}
	var by string
	if h.identity != nil {
		by = h.identity(r)
	}
	cmd, attrs, err := build(by)
	if err != nil {
		fail(w, err)
		return
	}
	res, err := h.svc.Propose(r.Context(), cmd)
	if err != nil {
		fail(w, err)
		return
	}
	args := append([]any{"action", name, "by", by}, attrs...)
	h.log.Info("admin: command", append(args, "from", r.RemoteAddr, "entry", res.Index)...)
	writeJSON(w, CommandResult{Action: name, Index: res.Index, Count: res.Count, Cancelled: res.Cancelled})
}
