package cli

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// serve runs h on ln until ctx ends, then lets requests in flight finish
// for up to grace.
func serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
