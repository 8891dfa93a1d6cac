package prom_test

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/metrics/prom"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// exported returns the names of every metric the collectors export.
func exported(t *testing.T) map[string]bool {
	reg := prometheus.NewPedanticRegistry()
	f, err := raftfsm.New(raftfsm.DefaultConfig())
	require.NoError(t, err)
	require.NoError(t, reg.Register(prom.NewFSMCollector(f.Stats)))
	require.NoError(t, reg.Register(prom.NewWorkerCollector(func() worker.Stats { return worker.Stats{} })))
	require.NoError(t, reg.Register(prom.NewLeaderCollector(func() leader.Metrics { return leader.Metrics{} })))
	ch := make(chan *prometheus.Desc, 1024)
	go func() {
		prom.NewFSMCollector(f.Stats).Describe(ch)
		prom.NewWorkerCollector(func() worker.Stats { return worker.Stats{} }).Describe(ch)
		prom.NewLeaderCollector(func() leader.Metrics { return leader.Metrics{} }).Describe(ch)
		close(ch)
	}()
	names := map[string]bool{}
	re := regexp.MustCompile(`fqName: "([a-z0-9_]+)"`)
	for d := range ch {
		m := re.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		names[m[1]] = true
	}
	require.NotEmpty(t, names)
	return names
}

var metricRef = regexp.MustCompile(`\bcompactkit_[a-z0-9_]+`)

// histogram series: a histogram exports name_bucket, name_sum, name_count.
func seriesName(r string, names map[string]bool) bool {
	for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(r, suffix); ok && names[base] {
			return true
		}
	}
	return false
}

// checkExprs asserts that every metric an expression names is exported.
func checkExprs(t *testing.T, where string, exprs []string, names map[string]bool) {
	require.NotEmpty(t, exprs, where)
	for _, e := range exprs {
		refs := metricRef.FindAllString(e, -1)
		require.NotEmpty(t, refs, "%s: %q names no compactkit metric", where, e)
		for _, r := range refs {
			require.True(t, seriesName(r, names), "%s: %q names %s, which no collector exports", where, e, r)
		}
	}
}

// runbookBase is where every alert's runbook_url points: the operating
// manual of the repository, one section per alert.
const runbookBase = "https://github.com/compactkit/compactkit/blob/main/"

// anchors returns the GitHub anchors of the Markdown file's headings.
func anchors(t *testing.T, path string) map[string]bool {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	out := map[string]bool{}
	inCode := false
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if inCode || !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		a := drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(title)), "")
		out[strings.ReplaceAll(a, " ", "-")] = true
	}
	return out
}

// checkRunbook asserts that the alert's runbook_url names a section of a
// Markdown file of the repository that exists, titled by the alert.
func checkRunbook(t *testing.T, alert, url string) {
	rel, ok := strings.CutPrefix(url, runbookBase)
	require.True(t, ok, "%s: runbook_url %q is not under %s", alert, url, runbookBase)
	path, frag, ok := strings.Cut(rel, "#")
	require.True(t, ok, "%s: runbook_url %q names no section", alert, url)
	require.Equal(t, strings.ToLower(alert), frag, "%s: the runbook's section is titled by the alert", alert)
	require.True(t, anchors(t, "../../"+path)[frag], "%s: %s has no section #%s", alert, path, frag)
}

// The shipped alert rules parse, name only exported metrics, and link a
// runbook that exists.
func TestAlertRules(t *testing.T) {
	data, err := os.ReadFile("alerts.yml")
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&rules))
	require.Len(t, rules.Groups, 1)
	names := exported(t)
	var alerts, exprs []string
	for _, r := range rules.Groups[0].Rules {
		require.NotEmpty(t, r.Alert)
		require.NotEmpty(t, r.Labels["severity"], r.Alert)
		require.NotEmpty(t, r.Annotations["summary"], r.Alert)
		checkRunbook(t, r.Alert, r.Annotations["runbook_url"])
		require.False(t, slices.Contains(alerts, r.Alert), "alert %s twice", r.Alert)
		alerts = append(alerts, r.Alert)
		exprs = append(exprs, r.Expr)
	}
	checkExprs(t, "alerts.yml", exprs, names)
}

// The shipped Grafana dashboard is valid JSON whose panels query only
// exported metrics.
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile("dashboard.json")
	require.NoError(t, err)
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &d))
	require.NotEmpty(t, d.Panels)
	var exprs []string
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	checkExprs(t, "dashboard.json", exprs, exported(t))
}
