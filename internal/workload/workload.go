// Package workload generates and replays LLM request arrivals for the
// serving simulator and the load generator. Sources stream: memory stays
// bounded by one request, not by the length of a trace. Time is seconds
// from the start of the workload; randomness comes from a seeded generator
// passed in.
package workload

import "math/rand/v2"

// Request is one arrival.
type Request struct {
	// At is the arrival time in seconds from the start.
	At       float64
	ISL, OSL int
}

// Source yields requests in arrival order. Next returns ok=false at the
// end; an error names what was wrong (for traces, the line).
type Source interface {
	Next() (r Request, ok bool, err error)
}

// Dist draws a token count.
type Dist interface {
	Sample(r *rand.Rand) int
}
