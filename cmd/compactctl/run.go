package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/compactkit/compactkit/admin"
)

// synopsis is the command line's form.
const synopsis = "compactctl [-addr URL] [-o table|json] [-H 'Header: value'] COMMAND [ARGS]"

// usage lists the commands and their flags; the package documentation
// repeats it (a test checks that both list every flag).
const usage = `  status                         (with backpressure grades and staleness alarms)
  jobs [-tenant T] [-level N] [-status S] [-limit N] [-cursor C]
  job NAME
  tenants
  quarantine
  dry-run [-slots N]
  pause (-tenant T | -all) [-level N]
  resume (-tenant T | -all) [-level N]
  retry [-job NAME]              (without -job: every excluded job)
  cancel -job NAME
  requeue BLOCK...               (also clears marks)
  mark [-reason TEXT] BLOCK...    (do not compact: quarantined until requeued)
  set-max-failures N
  fsck
  fsck-remove KEY...
  policy list
  policy set (-tenant T | -all) [-class high|medium|low] [-cap N] [-shard-cap N]
      [-only-in HH:MM-HH:MM[,...] | -never-in HH:MM-HH:MM[,...]] [-days Mon,Tue] [-offset MINUTES]
      [-not-before RFC3339] [-slow ON/OFF] [-stop ON/OFF] [-slow-ready-batches ON/OFF] [-stop-ready-batches ON/OFF]
      [-shard-slow ON/OFF] [-shard-stop ON/OFF]
      [-stale DURATION] [-level L:blocks=N,bytes=N,age=DURATION,cross=on|off]...
      [-level-only-in L=HH:MM-HH:MM[,...] | -level-never-in L=HH:MM-HH:MM[,...]]...
  policy clear (-tenant T | -all)
  compact-now (-tenant T | -all) [-level L]

  pause stops new jobs of the tenant (with -all, of every tenant) at every
  level, or at -level N only; jobs in progress run to their end. resume
  undoes a pause: it names the tenant, or -all, and the level as the pause
  did. policy set replaces the whole policy of the tenant (with -all, the
  default policy of every tenant without its own): flags left out take the
  zero policy's value (class medium, no cap, no window, no threshold, no
  alarm). -cap and -shard-cap bound the tenant's jobs in progress, in all
  and on each shard. Windows open on -days (default every day) at -offset
  minutes east of UTC; an end before the start wraps past midnight. -slow
  100/80 enters "slow" at 100 queued blocks and leaves it below 80;
  -shard-slow and -shard-stop grade each shard of the tenant apart, by its
  queued blocks. -level 0:blocks=40,age=2m gives the tenant's level-0 jobs
  up to 40 blocks and plans partial level-0 batches after 2 minutes
  (settings left out keep the cluster's); repeat it for other levels.
  -level-only-in 1=23:00-05:00 starts the tenant's new level-1 jobs only at
  night, on top of its own windows (-days and -offset apply to these
  windows too). policy clear returns a tenant to the default (with -all,
  resets the default). compact-now plans the tenant's queued blocks without
  waiting for batches to fill or age. -tenant "" names the empty tenant
  (multi-tenant segments).
`

// client talks to the admin API.
type client struct {
	base    string
	headers http.Header
	http    *http.Client
}

// headerList collects -H flags.
type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

// run runs one command; usage errors and API errors are returned.
func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("compactctl", flag.ContinueOnError)
	fs.SetOutput(errOut)
	addr := fs.String("addr", "http://127.0.0.1:8080/admin/", "base URL of the admin API")
	format := fs.String("o", "table", "output: table or json")
	var hdrs headerList
	fs.Var(&hdrs, "H", "extra request header 'Name: value' (repeatable), e.g. for the host's authorization")
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: "+synopsis)
		fs.PrintDefaults()
		fmt.Fprint(errOut, "\ncommands:\n"+usage)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("-o %q: want table or json", *format)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no command")
	}
	c := &client{base: strings.TrimSuffix(*addr, "/") + "/", headers: http.Header{}, http: &http.Client{Timeout: 30 * time.Second}}
	for _, h := range hdrs {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return fmt.Errorf("-H %q: want 'Name: value'", h)
		}
		c.headers.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	var show showFunc = func(v any, table func(w *tabwriter.Writer)) error {
		if *format == "json" {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		table(w)
		return w.Flush()
	}
	switch cmd {
	case "status":
		return getShown(ctx, c, show, "api/status", nil, func(w *tabwriter.Writer, st admin.Status) {
			fmt.Fprintf(w, "leader\t%s\n", st.LeaderID)
			fmt.Fprintf(w, "term\t%d\nentry\t%d\nlog time\t%s\ncluster version\t%d\nworkers\t%d\n", st.Term, st.LastApplied, st.LogTime, st.ClusterVersion, st.Workers)
			fmt.Fprintf(w, "queued\t%d\nclaimed\t%d\nquarantined\t%d\ntombstones\t%d\ndrained\t%t\n", st.Queued, st.Claimed, st.Quarantined, st.Tombstones, st.Drained)
			for _, s := range []string{"unassigned", "in_progress", "excluded"} {
				fmt.Fprintf(w, "jobs %s\t%d\n", s, st.Jobs[s])
			}
			fmt.Fprintf(w, "paused\t%s\n", strings.Join(st.Paused, "; "))
			if st.Failed != "" {
				fmt.Fprintf(w, "FAILED\t%s\n", st.Failed)
			}
			fmt.Fprintln(w, "\nLEVEL\tQUEUED\tCLAIMED\tREADY\tLAG\tDEBT")
			for _, l := range st.Levels {
				fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%s\t%d\n", l.Level, l.Queued, l.Claimed, l.ReadyBatches, l.Lag, l.DebtBlockSec)
			}
			if len(st.Pressure) > 0 {
				fmt.Fprintln(w, "\nBACKPRESSURE\tGRADE")
				for _, p := range st.Pressure {
					fmt.Fprintf(w, "%s\t%s\n", admin.TenantName(p.Tenant), p.Grade)
				}
			}
			if len(st.ShardPressure) > 0 {
				fmt.Fprintln(w, "\nSHARD BACKPRESSURE\tSHARD\tGRADE")
				for _, p := range st.ShardPressure {
					fmt.Fprintf(w, "%s\t%d\t%s\n", admin.TenantName(p.Tenant), p.Shard, p.Grade)
				}
			}
			if len(st.Alarms) > 0 {
				fmt.Fprintln(w, "\nSTALE\tLEVEL\tOLDEST QUEUED\tALARM SINCE\tFOR")
				for _, a := range st.Alarms {
					fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", admin.TenantName(a.Tenant), a.Level, a.Oldest, a.Since, a.For)
				}
			}
		})
	case "jobs":
		sub := flag.NewFlagSet("jobs", flag.ContinueOnError)
		sub.SetOutput(errOut)
		tenant := sub.String("tenant", "", "tenant")
		level := sub.Int("level", -1, "level")
		status := sub.String("status", "", "unassigned, in_progress or excluded")
		limit := sub.Int("limit", 0, "page size")
		cursor := sub.String("cursor", "", "cursor of the page")
		if err := sub.Parse(rest); err != nil {
			return err
		}
		q := url.Values{}
		sub.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "tenant":
				q.Set("tenant", *tenant)
			case "level":
				q.Set("level", strconv.Itoa(*level))
			}
		})
		if *status != "" {
			q.Set("status", *status)
		}
		if *limit > 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		if *cursor != "" {
			q.Set("cursor", *cursor)
		}
		return getShown(ctx, c, show, "api/jobs", q, func(w *tabwriter.Writer, page admin.JobPage) {
			fmt.Fprintln(w, "JOB\tTENANT\tLEVEL\tSTATUS\tWORKER\tTOKEN\tFAILURES\tLAST FAILURE")
			for _, j := range page.Jobs {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%d\t%d\t%s\n", j.Name, admin.TenantName(j.Tenant), j.Level, j.Status, j.Worker, j.Token, j.Failures, j.LastFailure)
			}
			if page.Next != "" {
				fmt.Fprintf(w, "\nnext page: -cursor %s\n", page.Next)
			}
		})
	case "job":
		if len(rest) != 1 {
			return errors.New("job: want the job's name")
		}
		return getShown(ctx, c, show, "api/jobs/"+url.PathEscape(rest[0]), nil, func(w *tabwriter.Writer, j admin.Job) {
			fmt.Fprintf(w, "job\t%s\ntenant\t%s\nlevel\t%d\nstatus\t%s\nworker\t%s\ntoken\t%d\ndeadline\t%s\nadded\t%s\nfailures\t%d\nlast failure\t%s\nfailed at\t%s\n",
				j.Name, admin.TenantName(j.Tenant), j.Level, j.Status, j.Worker, j.Token, j.Deadline, j.AddedAt, j.Failures, j.LastFailure, j.FailedAt)
			fmt.Fprintf(w, "sources\t%s\ntombstones\t%s\n", strings.Join(j.Sources, " "), strings.Join(j.Tombstones, " "))
			if len(j.History) > 0 {
				fmt.Fprintln(w, "\nAT\tEVENT\tTOKEN\tWORKER\tDETAIL")
				for _, ev := range j.History {
					fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", ev.At, ev.Kind, ev.Token, ev.Worker, ev.Detail)
				}
			}
		})
	case "tenants":
		return getShown(ctx, c, show, "api/tenants", nil, func(w *tabwriter.Writer, ts []admin.Tenant) {
			fmt.Fprintln(w, "TENANT\tLEVEL\tQUEUED\tREADY\tLAG\tDEBT")
			for _, t := range ts {
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%d\n", admin.TenantName(t.Tenant), t.Level, t.Queued, t.ReadyBatches, t.Lag, t.DebtBlockSec)
			}
		})
	case "quarantine":
		return getShown(ctx, c, show, "api/quarantine", nil, func(w *tabwriter.Writer, q admin.QuarantinePage) {
			fmt.Fprintln(w, "BLOCK\tTENANT\tLEVEL\tJOB\tSINCE\tREASON")
			for _, b := range q.Blocks {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", b.ID, admin.TenantName(b.Tenant), b.Level, b.Job, b.Since, b.Reason)
			}
		})
	case "dry-run":
		sub := flag.NewFlagSet("dry-run", flag.ContinueOnError)
		sub.SetOutput(errOut)
		slots := sub.Int("slots", 1, "free slots of the imagined poll")
		if err := sub.Parse(rest); err != nil {
			return err
		}
		return getShown(ctx, c, show, "api/dry-run", url.Values{"slots": {strconv.Itoa(*slots)}}, func(w *tabwriter.Writer, ps []admin.Planned) {
			fmt.Fprintln(w, "CHANGE\tJOB\tTENANT\tLEVEL\tSOURCES\tTOMBSTONES")
			for _, p := range ps {
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\n", p.Change, p.Job, admin.TenantName(p.Tenant), p.Level, len(p.Sources), p.Cleanup)
			}
		})
	case "fsck":
		return getShown(ctx, c, show, "api/fsck", nil, func(w *tabwriter.Writer, rep admin.FsckReport) {
			fmt.Fprintf(w, "objects\t%d\norphans\t%d\nmissing\t%d\n", rep.Objects, len(rep.Orphans), len(rep.Missing))
			for _, o := range rep.Orphans {
				fmt.Fprintf(w, "orphan\t%s\t%d bytes\n", o.Key, o.Size)
			}
			for _, id := range rep.Missing {
				fmt.Fprintf(w, "missing\t%s\n", id)
			}
		})
	case "fsck-remove":
		if len(rest) == 0 {
			return errors.New("fsck-remove: name the orphaned keys to remove (from fsck)")
		}
		var res admin.RemoveResult
		if err := c.post(ctx, "api/fsck/remove", admin.RemoveRequest{Keys: rest}, &res); err != nil {
			return err
		}
		return show(res, func(w *tabwriter.Writer) {
			for _, k := range res.Removed {
				fmt.Fprintf(w, "removed\t%s\n", k)
			}
			for _, k := range res.Kept {
				fmt.Fprintf(w, "kept (not a listed orphan)\t%s\n", k)
			}
		})
	case "policy":
		if len(rest) == 0 {
			return errors.New("policy: want list, set or clear")
		}
		switch rest[0] {
		case "list":
			if len(rest) > 1 {
				return fmt.Errorf("policy list: unexpected arguments %q", rest[1:])
			}
			return getShown(ctx, c, show, "api/policies", nil, func(w *tabwriter.Writer, ps admin.Policies) { policyTable(w, &ps) })
		case "set", "clear":
			return c.command(ctx, "policy-"+rest[0], func() (any, error) { return policyBody(rest[0], rest[1:], errOut) }, show)
		default:
			return fmt.Errorf("policy %q: want list, set or clear", rest[0])
		}
	case "compact-now":
		return c.command(ctx, cmd, func() (any, error) { return policyBody(cmd, rest, errOut) }, show)
	case "pause", "resume", "retry", "cancel", "requeue", "mark", "set-max-failures":
		return c.command(ctx, cmd, func() (any, error) { return commandBody(cmd, rest, errOut) }, show)
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// showFunc prints a value: as JSON, or as the table the function writes.
type showFunc func(v any, table func(w *tabwriter.Writer)) error

// getShown gets path with the query q and shows the T the API returns;
// table writes it as a table.
func getShown[T any](ctx context.Context, c *client, show showFunc, path string, q url.Values, table func(w *tabwriter.Writer, v T)) error {
	var v T
	if err := c.get(ctx, path, q, &v); err != nil {
		return err
	}
	return show(v, func(w *tabwriter.Writer) { table(w, v) })
}

// command posts the body that body builds to api/commands/action and shows
// the result.
func (c *client) command(ctx context.Context, action string, body func() (any, error), show showFunc) error {
	b, err := body()
	if err != nil {
		return err
	}
	var res admin.CommandResult
	if err := c.post(ctx, "api/commands/"+action, b, &res); err != nil {
		return err
	}
	return show(res, func(w *tabwriter.Writer) {
		fmt.Fprintf(w, "%s applied at entry %d", res.Action, res.Index)
		if res.Count > 0 {
			fmt.Fprintf(w, " (%d)", res.Count)
		}
		fmt.Fprintln(w)
	})
}

// commandBody builds an operator command's JSON body from its arguments:
// each command has its own flags.
func commandBody(cmd string, args []string, errOut io.Writer) (*admin.Command, error) {
	sub := flag.NewFlagSet(cmd, flag.ContinueOnError)
	sub.SetOutput(errOut)
	var tenant, job, reason *string
	var all *bool
	level := -1
	switch cmd {
	case "pause", "resume":
		tenant = sub.String("tenant", "", "the tenant (-tenant \"\" is the empty tenant of multi-tenant segments)")
		all = sub.Bool("all", false, "every tenant")
		sub.IntVar(&level, "level", -1, "only this level (default every level)")
	case "retry":
		job = sub.String("job", "", "the excluded job to retry (default every excluded job)")
	case "cancel":
		job = sub.String("job", "", "the job to cancel")
	case "mark":
		reason = sub.String("reason", "", "why the blocks are marked")
	}
	if err := sub.Parse(args); err != nil {
		return nil, err
	}
	c := &admin.Command{}
	given := map[string]bool{}
	sub.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch cmd {
	case "pause", "resume":
		if given["tenant"] == *all {
			return nil, fmt.Errorf("%s: want -tenant T or -all (-tenant \"\" is the empty tenant)", cmd)
		}
		c.All = *all
		if given["tenant"] {
			c.Tenant = tenant
		}
		if level >= 0 {
			l := uint32(level)
			c.Level = &l
		}
	case "retry":
		c.Job = *job
	case "cancel":
		if *job == "" {
			return nil, errors.New("cancel: want -job NAME")
		}
		c.Job = *job
	case "mark":
		c.Reason = *reason
	}
	switch cmd {
	case "requeue", "mark":
		if sub.NArg() == 0 {
			return nil, fmt.Errorf("%s: name the blocks", cmd)
		}
		c.Blocks = sub.Args()
	case "set-max-failures":
		if sub.NArg() != 1 {
			return nil, errors.New("set-max-failures: want the limit (0 = unlimited)")
		}
		n, err := strconv.ParseUint(sub.Arg(0), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("set-max-failures %q: %w", sub.Arg(0), err)
		}
		m := uint32(n)
		c.MaxFailures = &m
	default:
		if sub.NArg() != 0 {
			return nil, fmt.Errorf("%s: unexpected arguments %q", cmd, sub.Args())
		}
	}
	return c, nil
}

// apiError is an error the API answered.
type apiError struct {
	Status     int
	Message    string `json:"error"`
	LeaderID   string `json:"leader_id"`
	LeaderAddr string `json:"leader_addr"`
	// Removed lists the objects fsck-remove removed before it failed.
	Removed []string `json:"removed"`
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	if e.LeaderID != "" || e.LeaderAddr != "" {
		msg += fmt.Sprintf(" (the leader is %s at %s)", e.LeaderID, e.LeaderAddr)
	}
	if len(e.Removed) > 0 {
		msg += fmt.Sprintf(" (removed before the failure: %s)", strings.Join(e.Removed, " "))
	}
	return msg
}

func (c *client) get(ctx context.Context, path string, q url.Values, out any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	return c.do(req, out)
}

func (c *client) post(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, out)
}

func (c *client) do(req *http.Request, out any) error {
	for k, vs := range c.headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		e := &apiError{Status: resp.StatusCode}
		if json.Unmarshal(data, e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(data))
		}
		return e
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: answer: %w", req.Method, req.URL.Path, err)
	}
	return nil
}
