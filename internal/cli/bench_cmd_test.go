package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A bench run in which the server answered nothing prints what it saw and
// exits non-zero: it measured no result.
func TestBenchFailsWhenEveryRequestFails(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	}))
	defer ts.Close()
	out, _, err := run(t, "bench", "--url", ts.URL, "--model", "m", "--rate", "20", "--arrival", "constant", "--duration", "200ms", "--isl", "10", "--osl", "5")
	if err == nil || !strings.Contains(err.Error(), "every request failed (4 of 4)") {
		t.Errorf("err %v", err)
	}
	for _, want := range []string{"4 failed", "HTTP 503", "no SLO given", "TTFT            none: no request completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "mean      0.0") {
		t.Errorf("latencies of zero for a run with no completed request:\n%s", out)
	}
	_, _, err = run(t, "bench", "--url", ts.URL, "--model", "m", "--rate", "1", "--slo-ttft", "NaN")
	if err == nil || !strings.Contains(err.Error(), "--slo-ttft: NaN ms") {
		t.Errorf("a NaN SLO: %v", err)
	}
}

// Limits that would be silently replaced or ignored are refused by flag.
func TestBenchFlagLimits(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--users", "1", "--timeout", "0s"}, "--timeout: 0s, want > 0"},
		{[]string{"--users", "1", "--speedup", "2"}, "--speedup applies to --trace only"},
		{[]string{"--rate", "1", "--trace-format", "mooncake"}, "--trace-format applies to --trace only"},
		{[]string{"--users", "1", "--arrival", "constant"}, "--arrival applies to --rate only"},
		{[]string{"--trace", "../../../shared/traces/azure_llm_2023_code.csv", "--osl", "10"}, "the trace gives each request's sizes"},
		{[]string{"--trace", "../../examples/burst.yaml", "--speedup", "NaN"}, "--speedup: NaN"},
		{[]string{"--rate", "2000", "--duration", "1h"}, "more than the 5000000 one run records"},
	} {
		_, _, err := run(t, append([]string{"bench", "--url", "http://127.0.0.1:1", "--model", "m"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
