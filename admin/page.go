package admin

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/policytext"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// pageData is what the status page shows.
type pageData struct {
	Status     *Status
	Tenants    []Tenant
	InProgress []Job
	Quarantine []Quarantined
	Chart      template.HTML
	Commands   bool
	// Policies: the default's row first, then the tenants' own;
	// MorePolicy counts the rows left out.
	Policies   []policyRow
	MorePolicy int
	CompactNow []string
	Pressure   []TenantGrade
	// ShardPressure: the shards' grades (not ok).
	ShardPressure []ShardGrade
	Alarms        []StaleAlarm
	// MoreGrades counts the grades and alarms left out.
	MoreGrades int
}

// policyRow is a policy as the page's table shows it.
type policyRow struct {
	Tenant                     string
	Default, Open              bool
	Class, Cap, Run, NotBefore string
	Pressure, StaleAfter       string
	Levels                     string
}

const none = "—"

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

func policyRowOf(t raftfsm.TenantPolicy, isDefault bool) policyRow {
	p := t.Policy
	row := policyRow{Tenant: t.Tenant, Default: isDefault, Open: t.Open, Class: p.Class.String(), Run: policytext.Run(p),
		NotBefore: orNone(policytext.NotBefore(p)), StaleAfter: orNone(policytext.StaleAfter(p)),
		Levels: orNone(policytext.Levels(p))}
	if isDefault {
		row.Tenant = "default"
	} else {
		row.Tenant = TenantName(t.Tenant)
	}
	row.Cap = policytext.Cap(p)
	row.Pressure = orNone(policytext.Pressure(p))
	return row
}

func compactNowText(c CompactNow) string {
	who := "tenant " + strconv.Quote(c.Tenant)
	if c.All {
		who = "every tenant"
	}
	level := "every level"
	if c.Level != nil {
		level = fmt.Sprintf("level %d", *c.Level)
	}
	return fmt.Sprintf("%s at %s (blocks queued up to %s)", who, level, c.Before)
}

// pageRows bounds each table of the page.
const pageRows = 50

// The page's inline style and scripts: its Content-Security-Policy
// allows exactly these, by hash (pageCSP).
const (
	pageStyle = `body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}
.ok{color:#060}.bad{color:#a00}
`
	// commandScript sends the forms' commands (with an authorizer only).
	// A command's result survives the page's refresh (sessionStorage); an
	// answer that is not JSON (a proxy's error page, say) shows its
	// status. The scripts hold no comment: html/template would remove it
	// from the page, and the page's script would no longer be the one
	// hashed.
	commandScript = `
function show(id, text) {
  sessionStorage.setItem(id, text);
  document.getElementById(id).textContent = text;
}
for (const id of ["command-result", "policy-result"]) {
  const text = sessionStorage.getItem(id);
  if (text) document.getElementById(id).textContent = text;
}
async function command(action, body) {
  const r = await fetch("api/commands/" + action, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const answer = await r.json().catch(() => ({error: r.status + " " + r.statusText}));
  return [r.ok, answer];
}
document.getElementById("pause-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const action = e.submitter.value;
  const tenant = document.getElementById("pause-tenant").value;
  const [ok, body] = await command(action, {tenant});
  show("command-result", ok ? action + "d " + tenant + " (entry " + body.index + ")" : body.error);
  if (ok) e.target.reset();
});
document.getElementById("policy-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const action = e.submitter.value;
  const all = document.getElementById("policy-all").checked;
  const tenant = document.getElementById("policy-tenant").value;
  const req = all ? {all} : {tenant};
  if (action === "policy-set") {
    try {
      req.policy = JSON.parse(document.getElementById("policy-json").value);
    } catch (err) {
      show("policy-result", "policy: " + err.message);
      return;
    }
  }
  const [ok, body] = await command(action, req);
  const who = all ? "the default" : JSON.stringify(tenant);
  show("policy-result", ok ? (action === "policy-set" ? "set " : "cleared ") + who + " (entry " + body.index + ")" : body.error);
  if (ok) e.target.reset();
});
`
	// refreshScript reloads the page every 5 s, but not while the
	// operator is composing a command: a form's field changed and not yet
	// sent (a command that succeeds resets its form; one that fails
	// leaves it to be corrected).
	refreshScript = `
function composing() {
  return Array.from(document.querySelectorAll("form input, form textarea")).some(f =>
    f.type === "checkbox" ? f.checked !== f.defaultChecked : f.value !== f.defaultValue);
}
setInterval(() => { if (!composing()) location.reload(); }, 5000);
`
)

// pageCSP is the status page's Content-Security-Policy: nothing loads
// but its own inline style and scripts (by hash), its scripts talk only
// to the handler, forms post only to it, and no page may frame it.
var pageCSP = "default-src 'none'; style-src " + cspHash(pageStyle) + "; script-src " + cspHash(commandScript) + " " +
	cspHash(refreshScript) + "; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// cspHash is the CSP source expression of an inline element's text.
func cspHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{"tenant": TenantName}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>compactkit status</title>
<style>` + pageStyle + `</style></head><body>
<h1>compactkit</h1>
{{with .Status}}
<p id="summary">leader <b id="leader">{{.LeaderID}}</b> · term {{.Term}} · entry {{.LastApplied}} · log time {{.LogTime}} · cluster version {{.ClusterVersion}} · workers {{.Workers}}
{{if .Failed}}<b class="bad">replica stopped: {{.Failed}}</b>{{end}}</p>
<p>queued <b id="queued">{{.Queued}}</b> · claimed <b id="claimed">{{.Claimed}}</b> · quarantined <b id="quarantined">{{.Quarantined}}</b> ·
tombstones <b id="tombstones">{{.Tombstones}}</b> · {{if .Drained}}<span class="ok" id="drained">drained</span>{{else}}<span id="drained">working</span>{{end}}</p>
<p>jobs: {{range $k, $v := .Jobs}}{{$k}} <b id="jobs-{{$k}}">{{$v}}</b> {{end}} · completed {{.Completed}} · failed {{.Failures}} · excluded {{.Excluded}}</p>
<p>paused: <span id="paused">{{if .Paused}}{{range .Paused}}{{.}}; {{end}}{{else}}nothing{{end}}</span></p>
<h2>Levels</h2>
<table id="levels"><tr><th>level</th><th>queued</th><th>claimed</th><th>ready batches</th><th>lag</th><th>debt (block·s)</th></tr>
{{range .Levels}}<tr><td>{{.Level}}</td><td>{{.Queued}}</td><td>{{.Claimed}}</td><td>{{.ReadyBatches}}</td><td>{{.Lag}}</td><td>{{.DebtBlockSec}}</td></tr>{{end}}
</table>
{{end}}
<h2>Backlog</h2>
{{.Chart}}
{{if .Commands}}
<h2>Pause or resume a tenant</h2>
<form id="pause-form"><input name="tenant" id="pause-tenant" placeholder="tenant" required>
<button type="submit" name="action" value="pause" id="pause-button">pause</button>
<button type="submit" name="action" value="resume" id="resume-button">resume</button>
<span id="command-result"></span></form>
<h2>Set or clear a policy</h2>
<form id="policy-form"><input name="tenant" id="policy-tenant" placeholder="tenant">
<label><input type="checkbox" id="policy-all"> the default (tenants without their own)</label><br>
<textarea id="policy-json" rows="3" cols="80" spellcheck="false" aria-label="policy, as in api/policies">{"class": "medium", "max_in_progress": 0}</textarea><br>
<button type="submit" name="action" value="policy-set" id="policy-set-button">set</button>
<button type="submit" name="action" value="policy-clear" id="policy-clear-button">clear</button>
<span id="policy-result"></span></form>
<script>` + commandScript + `</script>
{{end}}
<h2>Policies</h2>
<table id="policies"><tr><th class="l">tenant</th><th class="l">class</th><th>cap</th><th class="l">run</th><th class="l">not before</th><th class="l">backpressure (on/off)</th><th class="l">stale after</th><th class="l">batching</th><th class="l">new jobs</th></tr>
{{range .Policies}}<tr{{if .Default}} id="policy-default"{{end}}><td class="l">{{if .Default}}<i>{{.Tenant}}</i>{{else}}{{.Tenant}}{{end}}</td><td class="l">{{.Class}}</td><td>{{.Cap}}</td><td class="l">{{.Run}}</td><td class="l">{{.NotBefore}}</td><td class="l">{{.Pressure}}</td><td class="l">{{.StaleAfter}}</td><td class="l">{{.Levels}}</td><td class="l">{{if .Open}}<span class="ok">open</span>{{else}}<span class="bad">closed</span>{{end}}</td></tr>{{end}}
</table>
{{if .MorePolicy}}<p>… and {{.MorePolicy}} more tenants' policies: <a href="api/policies">api/policies</a></p>{{end}}
<p>compact now: <span id="compact-now">{{if .CompactNow}}{{range .CompactNow}}{{.}}; {{end}}{{else}}nothing{{end}}</span></p>
<h2>Backpressure</h2>
{{if not .Pressure}}<p id="pressure">every tenant ok</p>{{else}}<table id="pressure"><tr><th class="l">tenant</th><th class="l">grade</th></tr>
{{range .Pressure}}<tr><td class="l">{{tenant .Tenant}}</td><td class="l{{if eq .Grade "stop"}} bad{{end}}">{{.Grade}}</td></tr>{{end}}
</table>{{end}}
{{if .ShardPressure}}<table id="shard-pressure"><tr><th class="l">tenant</th><th>shard</th><th class="l">grade</th></tr>
{{range .ShardPressure}}<tr><td class="l">{{tenant .Tenant}}</td><td>{{.Shard}}</td><td class="l{{if eq .Grade "stop"}} bad{{end}}">{{.Grade}}</td></tr>{{end}}
</table>{{end}}
<h2>Staleness alarms</h2>
{{if not .Alarms}}<p id="alarms">none</p>{{else}}<table id="alarms"><tr><th class="l">tenant</th><th>level</th><th class="l">oldest queued</th><th class="l">alarm since</th><th class="l">for</th></tr>
{{range .Alarms}}<tr><td class="l">{{tenant .Tenant}}</td><td>{{.Level}}</td><td class="l">{{.Oldest}}</td><td class="l">{{.Since}}</td><td class="l bad">{{.For}}</td></tr>{{end}}
</table>{{end}}
{{if .MoreGrades}}<p>… and {{.MoreGrades}} more grades and alarms: <a href="api/status">api/status</a></p>{{end}}
<h2>Tenants</h2>
<table id="tenants"><tr><th class="l">tenant</th><th>level</th><th>queued</th><th>ready</th><th>lag</th><th>debt (block·s)</th></tr>
{{range .Tenants}}<tr><td class="l">{{tenant .Tenant}}</td><td>{{.Level}}</td><td>{{.Queued}}</td><td>{{.ReadyBatches}}</td><td>{{.Lag}}</td><td>{{.DebtBlockSec}}</td></tr>{{end}}
</table>
<h2>Jobs in progress</h2>
<table id="in-progress"><tr><th class="l">job</th><th class="l">tenant</th><th>level</th><th class="l">worker</th><th>token</th><th class="l">deadline</th><th>failures</th><th class="l">last failure</th></tr>
{{range .InProgress}}<tr><td class="l">{{.Name}}</td><td class="l">{{tenant .Tenant}}</td><td>{{.Level}}</td><td class="l">{{.Worker}}</td><td>{{.Token}}</td><td class="l">{{.Deadline}}</td><td>{{.Failures}}</td><td class="l">{{.LastFailure}}</td></tr>{{end}}
</table>
<h2>Quarantined blocks</h2>
<table id="quarantine"><tr><th class="l">block</th><th class="l">tenant</th><th>level</th><th class="l">job</th><th class="l">reason</th><th class="l">since</th></tr>
{{range .Quarantine}}<tr><td class="l">{{.ID}}</td><td class="l">{{tenant .Tenant}}</td><td>{{.Level}}</td><td class="l">{{.Job}}</td><td class="l">{{.Reason}}</td><td class="l">{{.Since}}</td></tr>{{end}}
</table>
<script>` + refreshScript + `</script>
<p>JSON: <a href="api/status">status</a> · <a href="api/jobs">jobs</a> · <a href="api/tenants">tenants</a> · <a href="api/quarantine">quarantine</a> · <a href="api/policies">policies</a> · <a href="api/dry-run?slots=4">dry run</a></p>
</body></html>
`))

// page serves the status page.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, "status") {
		return
	}
	ctx := r.Context()
	st, err := h.statusOf(ctx)
	if err != nil {
		fail(w, err)
		return
	}
	d := pageData{Status: st, Commands: h.auth != nil, Pressure: st.Pressure[:min(len(st.Pressure), pageRows)],
		ShardPressure: st.ShardPressure[:min(len(st.ShardPressure), pageRows)], Alarms: st.Alarms[:min(len(st.Alarms), pageRows)]}
	ps, err := h.policiesOf(r)
	if err != nil {
		fail(w, err)
		return
	}
	d.Policies = append(d.Policies, policyRowOf(ps.Default, true))
	for _, t := range ps.Tenants[:min(len(ps.Tenants), pageRows)] {
		d.Policies = append(d.Policies, policyRowOf(t, false))
	}
	d.MorePolicy = len(ps.Tenants) - min(len(ps.Tenants), pageRows)
	d.MoreGrades = len(st.Pressure) - len(d.Pressure) + len(st.ShardPressure) - len(d.ShardPressure) + len(st.Alarms) - len(d.Alarms)
	for _, c := range ps.CompactNow {
		d.CompactNow = append(d.CompactNow, compactNowText(c))
	}
	d.Tenants = h.tenantRows(pageRows)
	f, err := h.svc.Read(ctx)
	if err != nil {
		fail(w, err)
		return
	}
	jobs, _ := f.Jobs(scheduler.Filter{Status: ck.StatusInProgress}, "", pageRows)
	for _, js := range jobs {
		d.InProgress = append(d.InProgress, jobOf(js))
	}
	q, _ := f.Quarantined("", pageRows)
	for _, b := range q {
		d.Quarantine = append(d.Quarantine, Quarantined{ID: b.ID, Tenant: b.Tenant, Level: b.Level, Job: b.Job, Reason: b.Reason, Since: logTime(b.Since)})
	}
	d.Chart = h.chart()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pageCSP)
	if err := pageTmpl.Execute(w, d); err != nil {
		h.log.Warn("admin: status page", "err", err)
	}
}

// chart draws the backlog history (queued blocks, jobs) as inline SVG.
func (h *Handler) chart() template.HTML {
	h.mu.Lock()
	hist := append([]sample(nil), h.history...)
	h.mu.Unlock()
	const width, height = 600, 120
	top := 1
	for _, s := range hist {
		top = max(top, s.queued, s.jobs)
	}
	line := func(v func(sample) int) string {
		var b strings.Builder
		for i, s := range hist {
			x := 0
			if len(hist) > 1 {
				x = i * width / (len(hist) - 1)
			}
			fmt.Fprintf(&b, "%d,%d ", x, height-v(s)*height/top)
		}
		return b.String()
	}
	svg := fmt.Sprintf(`<svg id="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="backlog over time">`+
		`<rect width="100%%" height="100%%" fill="#fafafa" stroke="#ccc"/>`+
		`<polyline fill="none" stroke="#36c" stroke-width="2" points="%s"/>`+
		`<polyline fill="none" stroke="#c63" stroke-width="2" points="%s"/>`+
		`<text x="4" y="14" font-size="12" fill="#36c">queued blocks (max %d)</text>`+
		`<text x="4" y="28" font-size="12" fill="#c63">jobs</text></svg>`,
		width, height, width, height, line(func(s sample) int { return s.queued }), line(func(s sample) int { return s.jobs }), top)
	return template.HTML(svg) //nolint:gosec // numbers only
}
