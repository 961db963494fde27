package emulate

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Under speculative decoding an emulated decode worker streams its tokens
// in bursts of the accepted length: the 49 tokens after the first take
// ceil(49/2.5) = 20 steps, never more than 3 at once, ending at the
// request's length (the first token goes out with the first step).
func TestRealtimeSpeculativeBursts(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	q := query()
	q.SpecTokens, q.SpecAccept = 3, 2.5
	srv, err := New(env(t), Config{Query: q, Role: "decode"}, prometheus.NewRegistry(), clk.now)
	if err != nil {
		t.Fatal(err)
	}
	seen := streamOnFakeClock(t, srv, clk, 50, 50)
	if len(seen) == 0 || seen[len(seen)-1] != 50 {
		t.Fatalf("tokens %v, want to end at 50", seen)
	}
	for i := 1; i < len(seen); i++ {
		if d := seen[i] - seen[i-1]; d < 1 || d > 3 {
			t.Errorf("tokens jump %d -> %d: 2 or 3 a step expected", seen[i-1], seen[i])
		}
	}
	if len(seen) != 20 {
		t.Errorf("%d updates, want one a step, ceil(49/2.5) = 20: %v", len(seen), seen)
	}
}
