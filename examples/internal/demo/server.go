package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/rpc"
)

// HTTPServer serves a node's endpoints (and /metrics) on loopback.
type HTTPServer struct {
	// URL is the base URL ("http://127.0.0.1:port").
	URL  string
	Addr string
	srv  *http.Server
	done chan struct{}
}

// Serve starts serving svc on addr ("127.0.0.1:0" for a free port): the
// worker protocol (package rpc) at the root, the read-only admin API and
// status page under /admin/, and reg's metrics at /metrics if reg is not
// nil. A nil svc serves the metrics only.
func Serve(addr string, svc *leader.Service, reg *prometheus.Registry, opts ...rpc.HandlerOption) (*HTTPServer, error) {
	var ln net.Listener
	var err error
	for range 50 { // a restarted node's port may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	if svc != nil {
		mux.Handle("/", rpc.NewHandler(svc, opts...))
		// The operator's status page and API, read-only: the demo has no
		// credentials to check.
		mux.Handle("/admin/", http.StripPrefix("/admin", admin.New(svc)))
	}
	if reg != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	s := &HTTPServer{URL: "http://" + ln.Addr().String(), Addr: ln.Addr().String(), done: make(chan struct{}),
		srv: rpc.NewServer(mux)}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener failed: clients see connection errors and move on
		}
	}()
	return s, nil
}

// Close stops the server: it stops accepting, and closes connections
// after in-flight requests finished (at most a second).
func (s *HTTPServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}
