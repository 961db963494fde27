package drivercli

import (
	"context"
	"io"
	"strings"
	"testing"
)

// Flag errors name the flag and come before any cluster access.
func TestRunFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "--node-name: required"},
		{[]string{"run", "--node-name=n", "--health-events=h.jsonl"}, `--health-events: "h.jsonl" is for --discovery profile`},
		{[]string{"run", "--node-name=n", "--profile=hgx-h100"}, `--profile: "hgx-h100" is for --discovery profile`},
		{[]string{"run", "--node-name=n", "--mig-layout=3g.40gb"}, `--mig-layout: "3g.40gb" is for --discovery profile`},
		// A kubeconfig that does not exist: each must fail on its flag first.
		{[]string{"run", "--node-name=n", "--kubeconfig=/nonexistent", "--discovery=magic"}, `--discovery: "magic"`},
		{[]string{"run", "--node-name=n", "--kubeconfig=/nonexistent", "--discovery=profile", "--profile=nonesuch"}, `--profile: unknown device profile "nonesuch"`},
		{[]string{"run", "--node-name=n", "--kubeconfig=/nonexistent", "--discovery=profile", "--profile=hgx-h100", "--mig-layout=9g.99gb"}, `"9g.99gb" is not a MIG profile`},
		{[]string{"run", "--node-name=n", "--kubeconfig=/nonexistent", "--discovery=profile", "--profile=hgx-h100", "--healthz-addr=nope"}, `--healthz-addr: "nope"`},
		{[]string{"run", "--node-name=n", "--kubeconfig=/nonexistent", "--discovery=profile", "--profile=hgx-h100", "--healthz-addr=:99999"}, `--healthz-addr: ":99999": port "99999", want 0 to 65535`},
		{[]string{"run", "--node-name=n", "--kubeconfig=/nonexistent", "--discovery=profile", "--profile=hgx-h100", "--cdi-dir=var/run/cdi"}, `--cdi-dir: "var/run/cdi" is relative`},
		{[]string{"run", "--node-name=n", "--kubeconfig=/nonexistent", "--discovery=profile", "--profile=hgx-h100", "--plugin-dir=plugins"}, `--plugin-dir: "plugins" is relative`},
		{[]string{"run", "--node-name=n", "--kubeconfig=/nonexistent", "--discovery=profile", "--profile=hgx-h100"}, "kubeconfig"},
	} {
		var stderr strings.Builder
		t.Setenv("NODE_NAME", "")
		if code := Main(context.Background(), tc.args, io.Discard, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
