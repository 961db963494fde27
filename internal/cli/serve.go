package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// checkServeFlags refuses what serve and a listener cannot take, before
// anything starts.
func checkServeFlags(port, maxConcurrent int) error {
	if port < 0 || port > 65535 {
		return fmt.Errorf("--port: %d, want 1 to 65535, or 0 for any free port", port)
	}
	if maxConcurrent < 0 {
		return fmt.Errorf("--max-concurrent-requests: %d, want >= 1, or 0 for no limit", maxConcurrent)
	}
	return nil
}

// serve runs h on ln until ctx ends, then lets requests in flight finish
// for up to grace. Headers and bodies must arrive in time and idle
// connections close; there is no write timeout, since answers stream for
// as long as generation takes. At most maxConcurrent requests run at once.
func serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration, maxConcurrent int) error {
	hs := &http.Server{Handler: limitConcurrent(h, maxConcurrent), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 1 << 20}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// Serve returns as soon as Shutdown closes the listener; the requests
	// in flight end only when Shutdown returns.
	<-drained
	return nil
}

// limitConcurrent answers 429, in OpenAI's error shape, once n requests
// are in flight: overload is refused at once instead of queued without end.
func limitConcurrent(h http.Handler, n int) http.Handler {
	if n <= 0 {
		return h
	}
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"too many requests in flight; retry shortly","type":"rate_limit_error","param":null,"code":429}}` + "\n"))
		}
	})
}
