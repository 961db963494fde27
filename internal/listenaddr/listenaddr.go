// Package listenaddr checks an address a gpuplane server will listen on
// before the server starts, so that a bad one is its flag's error, named,
// and not a failed bind after the server has connected to a cluster.
package listenaddr

import (
	"fmt"
	"net"
	"strconv"
)

// Check refuses an address that is not host:port with a port from 0 to
// 65535; field names the flag or key in the error, example a good value.
// A host is left to the bind: a name resolves only where the server runs.
func Check(field, addr, example string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: %q: %v; give host:port (:port listens on every interface), e.g. %s", field, addr, err, example)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%s: %q: port %q, want 0 to 65535 (0: any free port), e.g. %s", field, addr, port, example)
	}
	return nil
}
