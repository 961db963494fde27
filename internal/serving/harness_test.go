package serving

import (
	"math"
	"strings"
	"testing"
)

func TestParseHarness(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Harness
		err  string
	}{
		{"", Steady, ""},
		{"steady", Steady, ""},
		{"Burst", Burst, ""},
		{"queued", Queued, ""},
		{"poisson", "", "steady, burst, queued"},
	} {
		got, err := ParseHarness(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: want an error listing %q, got %v", tc.in, tc.err, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v", tc.in, got, err)
		}
	}
	w := worker(t, "Qwen/Qwen3-8B", "h100_sxm", 1)
	if _, err := Aggregated(w, 1, Workload{ISL: 100, OSL: 10, Concurrency: 2}, Options{Harness: "open"}); err == nil || !strings.Contains(err.Error(), "harness") {
		t.Fatalf("an unknown harness must be an error naming the field, got %v", err)
	}
}

// With one user, a queued client creates each request as it sends the
// previous one, so every request after the first waits for the whole of
// the one before it: the queued TTFT is the burst TTFT plus the mean
// end-to-end latency of the earlier requests.
func TestQueuedHarnessOneUserWaitsForThePreviousRequest(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-8B", "h100_sxm", 1)
	wl := Workload{ISL: 2000, OSL: 200, Concurrency: 1}
	const rounds = 5
	burst, err := Aggregated(w, 1, wl, Options{Harness: Burst, Rounds: rounds})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := Aggregated(w, 1, wl, Options{Harness: Queued, Rounds: rounds})
	if err != nil {
		t.Fatal(err)
	}
	// Burst measures the opening request plus rounds-1 steady ones; all but
	// the opening request wait for their predecessor (TTFT + decode).
	serverE2E := burst.TTFTms + float64(wl.OSL-1)*burst.TPOTms
	want := burst.TTFTms + serverE2E*float64(rounds-1)/float64(rounds)
	if math.Abs(queued.TTFTms-want) > 0.02*want {
		t.Fatalf("queued TTFT %.1f ms, want about %.1f (burst %.1f + %d/%d of a request's %.1f ms)",
			queued.TTFTms, want, burst.TTFTms, rounds-1, rounds, serverE2E)
	}
	if queued.TPOTms != burst.TPOTms || queued.OutputTokensPerS != burst.OutputTokensPerS {
		t.Fatalf("the client's stamps must not change the engine: TPOT %.3f vs %.3f", queued.TPOTms, burst.TPOTms)
	}
}

// With many users the wait is one gap between completions: about a
// request's latency divided by the concurrency.
func TestQueuedHarnessAddsOneCompletionGap(t *testing.T) {
	w := worker(t, "Qwen/Qwen3-8B", "h100_sxm", 1)
	wl := Workload{ISL: 1000, OSL: 400, Concurrency: 16}
	burst, err := Aggregated(w, 1, wl, Options{Harness: Burst})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := Aggregated(w, 1, wl, Options{Harness: Queued})
	if err != nil {
		t.Fatal(err)
	}
	gap := burst.E2Ems / float64(wl.Concurrency)
	extra := queued.TTFTms - burst.TTFTms
	if extra < 0.5*gap || extra > 1.5*gap {
		t.Fatalf("queued adds %.1f ms to TTFT, want about one completion gap (%.1f ms)", extra, gap)
	}
}
