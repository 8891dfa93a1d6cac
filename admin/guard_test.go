package admin_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/blockmerge"
)

// send makes a request over real HTTP with the given Host and headers and
// returns the answer's status, headers and body.
func send(t *testing.T, srv *httptest.Server, method, path, host, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(data)
}

// A page on a name rebound to the node's address (DNS rebinding) reaches
// the handler with its own name in Host and Origin: every request, read
// or command, is refused with 403 and the code naming the option, and
// changes nothing; the loopback name and the IP literal the request
// arrived on are served, and so are the names the option lists.
func TestDNSRebinding(t *testing.T) {
	n := newNode(t)
	srv := httptest.NewServer(admin.New(n.svc, admin.WithAuthorizer(allow), admin.WithStore(blockmerge.NewMemStore(), blockmerge.ObjectLayout)))
	defer srv.Close()
	port := srv.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":"):]
	before := n.snapshot(t)

	reqs := []struct{ method, path, body string }{
		{"GET", "/", ""}, {"GET", "/api/status", ""}, {"GET", "/api/jobs", ""}, {"GET", "/api/jobs/" + n.job.Job, ""},
		{"GET", "/api/tenants", ""}, {"GET", "/api/quarantine", ""}, {"GET", "/api/dry-run", ""}, {"GET", "/api/fsck", ""},
		{"GET", "/api/policies", ""}, {"GET", "/api/nothing", ""},
		{"POST", "/api/commands/pause", `{"tenant":"acme"}`},
		{"POST", "/api/commands/policy-set", `{"all":true,"policy":{"class":"low"}}`},
		{"POST", "/api/fsck/remove", `{"keys":["blocks/seg-1"]}`},
	}
	for _, host := range []string{"rebind.evil.example" + port, "REBIND.evil.example", "localhost.evil.example" + port, "10.1.2.3" + port, "[::1]" + port} {
		for _, r := range reqs {
			code, _, body := send(t, srv, r.method, r.path, host, r.body, map[string]string{"Origin": "http://" + host})
			require.Equal(t, http.StatusForbidden, code, "%s %s %s", host, r.method, r.path)
			var e struct{ Error, Code string }
			require.NoError(t, json.Unmarshal([]byte(body), &e), body)
			require.Equal(t, "WithAllowedHosts", e.Code, body)
			require.Contains(t, e.Error, "admin.WithAllowedHosts")
		}
	}
	require.Equal(t, before, n.snapshot(t), "refused requests change nothing")

	for _, host := range []string{"localhost" + port, "LocalHost." + port, "127.0.0.1" + port, "localhost"} {
		code, _, body := send(t, srv, "GET", "/api/status", host, "", nil)
		require.Equal(t, http.StatusOK, code, "%s: %s", host, body)
	}
	code, _, body := send(t, srv, "POST", "/api/commands/pause", "localhost"+port, `{"tenant":"acme"}`, map[string]string{"Origin": "http://localhost" + port})
	require.Equal(t, http.StatusOK, code, body)

	// Names of the host's own, given by the option.
	named := httptest.NewServer(admin.New(n.svc, admin.WithAuthorizer(allow), admin.WithAllowedHosts("admin.example.com")))
	defer named.Close()
	for host, want := range map[string]int{
		"admin.example.com" + port: 200, "Admin.Example.Com": 200, "127.0.0.1" + port: 200,
		"localhost" + port: 403, "rebind.evil.example" + port: 403,
	} {
		code, _, body := send(t, named, "GET", "/api/status", host, "", nil)
		require.Equal(t, want, code, "%s: %s", host, body)
	}
}

// Every response forbids framing and content sniffing; the status page
// carries a strict CSP that allows exactly its own inline style and
// scripts, by hash.
func TestSecurityHeaders(t *testing.T) {
	n := newNode(t)
	for _, opts := range [][]admin.Option{nil, {admin.WithAuthorizer(allow)}} {
		srv := httptest.NewServer(admin.New(n.svc, opts...))
		for _, r := range []struct{ method, path, host, body string }{
			{"GET", "/", "", ""}, {"GET", "/api/status", "", ""}, {"GET", "/api/jobs/no.such.job", "", ""},
			{"GET", "/api/nothing", "", ""}, {"GET", "/api/commands/pause", "", ""},
			{"POST", "/api/commands/pause", "", `{"tenant":`}, {"POST", "/api/commands/resume", "", `{"tenant":"acme"}`},
			{"GET", "/api/status", "rebind.evil.example", ""},
		} {
			_, h, _ := send(t, srv, r.method, r.path, r.host, r.body, nil)
			require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), "%s %s", r.method, r.path)
			require.Equal(t, "DENY", h.Get("X-Frame-Options"), "%s %s", r.method, r.path)
		}
		code, h, page := send(t, srv, "GET", "/", "", "", nil)
		require.Equal(t, 200, code)
		csp := h.Get("Content-Security-Policy")
		require.Contains(t, csp, "frame-ancestors 'none'")
		require.Contains(t, csp, "default-src 'none'")
		require.NotContains(t, csp, "unsafe")
		inline := regexp.MustCompile(`(?s)<(script|style)>(.*?)</(?:script|style)>`).FindAllStringSubmatch(page, -1)
		require.NotEmpty(t, inline)
		for _, m := range inline {
			sum := sha256.Sum256([]byte(m[2]))
			require.Contains(t, csp, m[1]+"-src", m[1])
			require.Contains(t, csp, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'", "the page's %s is allowed by its hash", m[1])
		}
		srv.Close()
	}
}

// Commands need a body declared as JSON (the media type parsed, not a
// prefix) and, from a browser, an Origin of the handler's own scheme,
// host and port.
func TestCommandOriginAndMediaType(t *testing.T) {
	n := newNode(t)
	srv := httptest.NewServer(admin.New(n.svc, admin.WithAuthorizer(allow)))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	before := n.snapshot(t)
	for _, c := range []struct {
		hdr  map[string]string
		code int
	}{
		{map[string]string{"Content-Type": "application/jsonp"}, 415},
		{map[string]string{"Content-Type": "application/json-seq"}, 415},
		{map[string]string{"Content-Type": "text/plain; application/json"}, 415},
		{map[string]string{"Content-Type": ""}, 415},
		{map[string]string{"Origin": "https://" + u.Host}, 403},             // another scheme
		{map[string]string{"Origin": "http://" + u.Hostname() + ":1"}, 403}, // another port
		{map[string]string{"Origin": "http://" + u.Hostname()}, 403},        // the default port, not the handler's
		{map[string]string{"Origin": "http://localhost:" + u.Port()}, 403},  // another host
		{map[string]string{"Origin": "null"}, 403},                          // a sandboxed page
		{map[string]string{"Origin": "http://" + u.Host + "@evil.example"}, 403},
	} {
		code, _, body := send(t, srv, "POST", "/api/commands/pause", "", `{"tenant":"acme"}`, c.hdr)
		require.Equal(t, c.code, code, "%v: %s", c.hdr, body)
	}
	require.Equal(t, before, n.snapshot(t), "refused commands change nothing")
	for _, hdr := range []map[string]string{
		{"Content-Type": "application/json; charset=utf-8", "Origin": "http://" + u.Host},
		{"Content-Type": "Application/JSON", "Origin": "HTTP://" + strings.ToUpper(u.Host)},
		{"Origin": "https://" + u.Host, "X-Forwarded-Proto": "https"}, // behind a proxy terminating TLS
	} {
		code, _, body := send(t, srv, "POST", "/api/commands/pause", "", `{"tenant":"acme"}`, hdr)
		require.Equal(t, 200, code, "%v: %s", hdr, body)
	}
}

// A malformed job, block or tenant name in a command is the caller's
// fault: 400, and nothing changes.
func TestMalformedNamesAreBadRequests(t *testing.T) {
	n := newNode(t)
	srv := httptest.NewServer(admin.New(n.svc, admin.WithAuthorizer(allow)))
	defer srv.Close()
	before := n.snapshot(t)
	for _, c := range []struct{ action, body string }{
		{"cancel", `{"job":"<script>"}`},
		{"retry", `{"job":"<script>"}`},
		{"mark", `{"blocks":["../etc"]}`},
		{"requeue", `{"blocks":["a//b"]}`},
		{"pause", `{"tenant":"a\u0001b"}`},
		{"resume", `{"tenant":"` + strings.Repeat("t", 300) + `"}`},
		{"policy-set", `{"tenant":"a\u0007b","policy":{"class":"low"}}`},
		{"policy-clear", `{"tenant":"a\u001bb"}`},
		{"compact-now", `{"tenant":"a\u007fb"}`},
	} {
		var e struct{ Error string }
		require.Equal(t, http.StatusBadRequest, call(t, srv, "POST", "/api/commands/"+c.action, c.body, nil, &e), "%s %s: %s", c.action, c.body, e.Error)
		require.NotEmpty(t, e.Error)
	}
	require.Equal(t, before, n.snapshot(t), "refused commands change nothing")
}

// The request guards (host, origin, media type) never panic and never
// answer 5xx, whatever the headers; a Host the handler does not serve is
// always refused with the option's code, and nothing changes unless the
// command was accepted.
func FuzzRequestGuards(f *testing.F) {
	f.Add("127.0.0.1:8080", "http://127.0.0.1:8080", "application/json")
	f.Add("rebind.evil.example:8080", "http://rebind.evil.example:8080", "application/json")
	f.Add("[::1]", "null", "application/jsonp")
	f.Add("localhost.", "HTTP://LOCALHOST.:80", "application/json; charset=\"utf-8\"")
	f.Add("", "://", ";;")
	n := newNode(f)
	h := admin.New(n.svc, admin.WithAuthorizer(allow))
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	f.Fuzz(func(t *testing.T, host, origin, contentType string) {
		req := httptest.NewRequest("POST", "/api/commands/set-max-failures", strings.NewReader(`{"max_failures":3}`))
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(local)))
		req.Host = host
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Less(t, rec.Code, 500, rec.Body.String())
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
		name, _, err := net.SplitHostPort(host)
		if err != nil {
			name = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		}
		name = strings.ToLower(strings.TrimSuffix(name, "."))
		ip, err := netip.ParseAddr(name)
		allowed := name == "localhost" || err == nil && ip.Unmap().WithZone("") == netip.MustParseAddr("127.0.0.1")
		refused := rec.Code == http.StatusForbidden && strings.Contains(rec.Body.String(), `"code":"WithAllowedHosts"`)
		require.Equal(t, !allowed, refused, "host %q: %d %s", host, rec.Code, rec.Body.String())
	})
}
