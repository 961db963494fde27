package serving

import (
	"fmt"
	"strings"
)

// Harness is how a benchmark client drives the users and stamps when a
// request starts. Mean TTFT depends on it as much as on the engine: the
// same deployment reads very differently under each.
type Harness string

const (
	// Steady is a long-running deployment: users are spread over one
	// request's lifetime and the first round is a warm-up, not measured.
	Steady Harness = "steady"
	// Burst is a benchmark client with a concurrency limit (`vllm bench
	// serve --max-concurrency`, aiperf, genai-perf): every user fires at
	// time zero and every request is measured, so the opening queue of
	// prompts counts.
	Burst Harness = "burst"
	// Queued is Burst with a client that stamps a request when it enters
	// its send queue, one request ahead of the free slots: TTFT then also
	// holds the wait for the next completion, about one request's latency
	// divided by the concurrency.
	Queued Harness = "queued"
)

// Harnesses lists every harness, for flags and reports.
var Harnesses = []Harness{Steady, Burst, Queued}

// ParseHarness reads a harness name; empty means Steady.
func ParseHarness(s string) (Harness, error) {
	if s == "" {
		return Steady, nil
	}
	for _, h := range Harnesses {
		if string(h) == strings.ToLower(s) {
			return h, nil
		}
	}
	return "", fmt.Errorf("%q is not a harness; use one of %s", s, harnessNames())
}

func harnessNames() string {
	names := make([]string, len(Harnesses))
	for i, h := range Harnesses {
		names[i] = string(h)
	}
	return strings.Join(names, ", ")
}

// stamper gives each request the time its client counts it from.
type stamper struct {
	queued bool
	last   float64
	any    bool
}

// stamp is called when a user sends a request at now. A queued client
// created this request when it sent the previous one.
func (s *stamper) stamp(now float64) float64 {
	if !s.queued {
		return now
	}
	at := now
	if s.any {
		at = s.last
	}
	s.last, s.any = now, true
	return at
}
