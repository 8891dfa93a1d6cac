package admin

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// WithAllowedHosts sets the host names a request may name in its Host
// header (compared without the port, case-insensitively), replacing the
// default, "localhost". Whatever the list, a Host that is an IP literal
// equal to the address the request arrived on is allowed (no DNS name is
// involved, so nothing can rebind it). A request to any other host is
// refused with 403 and the error code "WithAllowedHosts", reads as
// commands: a hostile page on a name rebound to this node's address
// (DNS rebinding) reaches the handler under its own name, which is not
// in the list. A host behind a reverse proxy or reached by a DNS name
// lists the names its operators use.
func WithAllowedHosts(names ...string) Option {
	return func(h *Handler) {
		h.hosts = map[string]bool{}
		for _, n := range names {
			h.hosts[strings.ToLower(strings.TrimSuffix(n, "."))] = true
		}
	}
}

// hostsCode is the error code of a request to a host not allowed: the
// option that allows it.
const hostsCode = "WithAllowedHosts"

// hostAllowed reports whether the request's Host is one the handler
// serves: a listed name, or an IP literal equal to the local address the
// request arrived on.
func (h *Handler) hostAllowed(r *http.Request) bool {
	host := r.Host
	if hn, _, err := net.SplitHostPort(host); err == nil {
		host = hn
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "."))
	if h.hosts[host] {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	lp, err := netip.ParseAddrPort(local.String())
	return err == nil && lp.Addr().Unmap().WithZone("") == ip.Unmap().WithZone("")
}

// secure sets the headers every response carries: no content sniffing,
// no framing.
func secure(w http.ResponseWriter) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
}

// requestScheme is the scheme the browser used to reach the handler:
// https over TLS, or when a reverse proxy terminating TLS says so
// (X-Forwarded-Proto, which a page cannot make a browser send across
// origins); http otherwise.
func requestScheme(r *http.Request) string {
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		return "https"
	}
	return "http"
}

// sameOrigin checks a browser's request: without an Origin header the
// request is not a cross-origin one from a browser; with one, its
// scheme, host and port must be the request's own.
func sameOrigin(r *http.Request) error {
	o := r.Header.Get("Origin")
	if o == "" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return fmt.Errorf("origin %q: not a URL of a page", o)
	}
	want := &url.URL{Scheme: requestScheme(r), Host: r.Host}
	if !strings.EqualFold(u.Scheme, want.Scheme) || !strings.EqualFold(hostPort(u), hostPort(want)) {
		return fmt.Errorf("cross-origin command from %q refused (the handler is %s://%s)", o, want.Scheme, r.Host)
	}
	return nil
}

// hostPort returns the URL's host and port, the scheme's default port
// when none is given.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// jsonBody checks that the request's body is declared as JSON.
func jsonBody(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("content type %q: want application/json", ct)
	}
	return nil
}

// errReadOnly refuses every command of a handler without an authorizer.
var errReadOnly = errors.New("read-only: this handler has no authorizer, so it runs no command")
