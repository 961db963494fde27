package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuplane/gpuplane/internal/emulate/emulatetest"
	"github.com/gpuplane/gpuplane/internal/workload"
)

func TestLoads(t *testing.T) {
	url, _ := emulatetest.Start(t, "agg")
	ctx := context.Background()
	base := Options{URL: url, Model: "m", ISL: workload.Fixed{N: 200}, OSL: workload.Fixed{N: 20}, Duration: 2 * time.Second,
		SLOTTFT: 5 * time.Second, SLOITL: time.Second}

	o := base
	o.Rate, o.Constant = 10, true
	progress := 0
	o.Progress = func(Progress) { progress++ }
	s, recs, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != 20 || s.Failed != 0 || s.Load != "constant" || progress == 0 {
		t.Fatalf("constant: %+v (progress %d)", s, progress)
	}
	for _, r := range recs {
		if r.OutputTokens != 20 || r.PromptTokens != 200 || r.TTFT <= 0 || r.E2E < r.TTFT || len(r.ITLs) < 1 {
			t.Errorf("record %+v", r)
		}
	}
	if s.Attainment != 1 || s.TTFT.P50 <= 0 || s.ITL.P50 <= 0 || s.OutputTokensPerSec <= 0 || s.Goodput <= 0 {
		t.Errorf("summary %+v", s)
	}

	o = base
	o.Users, o.Requests = 3, 9
	s, _, err = Run(ctx, o)
	if err != nil || s.Requests != 9 || s.Load != "users" {
		t.Errorf("users: %+v %v", s, err)
	}

	o = base
	o.Source, _ = workload.NewReplay(strings.NewReader("{\"at\":0,\"isl\":100,\"osl\":5}\n{\"at\":0.2,\"isl\":300,\"osl\":7}\n"), workload.FormatGpuplane, workload.ReplayOptions{})
	s, recs, err = Run(ctx, o)
	if err != nil || s.Requests != 2 || s.Load != "trace" {
		t.Fatalf("trace: %+v %v", s, err)
	}
	if recs[1].OutputTokens != 7 || recs[1].PromptTokens != 300 {
		t.Errorf("trace sizes not honoured: %+v", recs[1])
	}

	// A tight SLO: nothing meets it, all still succeed.
	o = base
	o.Rate, o.SLOTTFT = 5, time.Microsecond
	s, _, _ = Run(ctx, o)
	if s.Failed != 0 || s.Attainment != 0 || s.Goodput != 0 {
		t.Errorf("tight SLO: %+v", s)
	}

	// Errors are counted, not fatal.
	o = base
	o.Rate, o.Model = 5, "not-served"
	s, _, _ = Run(ctx, o)
	if s.Failed != s.Requests || s.Requests == 0 || len(s.Errors) == 0 {
		t.Errorf("wrong model: %+v", s)
	}
}

func TestOptionErrors(t *testing.T) {
	one := workload.Fixed{N: 1}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{URL: "http://x", Model: "m", Duration: time.Second, ISL: one, OSL: one}, "choose one load"},
		{Options{URL: "http://x", Model: "m", Duration: time.Second, Rate: 1, Users: 2, ISL: one, OSL: one}, "choose one load"},
		{Options{URL: "http://x", Model: "m", Rate: 1, ISL: one, OSL: one}, "--duration"},
		{Options{URL: "127.0.0.1:8000", Model: "m", Duration: time.Second, Rate: 1, ISL: one, OSL: one}, `--url: "127.0.0.1:8000" is not an http(s) URL`},
		{Options{URL: "http://", Model: "m", Duration: time.Second, Rate: 1, ISL: one, OSL: one}, "--url"},
		{Options{URL: "http://x", Model: "m", Duration: time.Second, Rate: 1, ISL: one, OSL: one, SLOTTFT: -time.Millisecond}, "--slo-ttft"},
	} {
		if _, _, err := Run(context.Background(), tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}
