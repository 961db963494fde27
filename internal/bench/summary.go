package bench

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Summary is a run's result.
type Summary struct {
	URL       string  `json:"url"`
	Model     string  `json:"model"`
	Load      string  `json:"load"`
	Duration  float64 `json:"durationSeconds"`
	Requests  int     `json:"requests"`
	Succeeded int     `json:"succeeded"`
	Failed    int     `json:"failed"`
	// Stopped says why the run ended before its duration, when it did.
	Stopped string `json:"stopped,omitempty"`
	// Errors counts failures by message (first 5 distinct).
	Errors map[string]int `json:"errors,omitempty"`
	// ShortAnswers counts completed requests with fewer output tokens than
	// asked: every request sets ignore_eos, so a server that stops early
	// does not honour it, and TPOT and throughput count fewer tokens than
	// the load meant.
	ShortAnswers       int         `json:"shortAnswers,omitempty"`
	RequestsPerSec     float64     `json:"requestsPerSecond"`
	OutputTokensPerSec float64     `json:"outputTokensPerSecond"`
	TTFT               Percentiles `json:"ttftMs"`
	ITL                Percentiles `json:"itlMs"`
	TPOT               Percentiles `json:"tpotMs"`
	E2E                Percentiles `json:"e2eMs"`
	SLOTTFTms          float64     `json:"sloTtftMs,omitempty"`
	SLOITLms           float64     `json:"sloItlMs,omitempty"`
	// Attainment is the share of requests meeting both SLOs; Goodput those per second.
	Attainment float64 `json:"attainment"`
	Goodput    float64 `json:"goodputRequestsPerSecond"`
	// Series are per-second means over the run, by send time.
	Series Series `json:"series"`
}

// Percentiles of a latency, milliseconds.
type Percentiles struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Series is the run over time, one point per second of send time.
type Series struct {
	Times     []float64 `json:"times"`
	Sent      []float64 `json:"sent"`
	TTFTms    []float64 `json:"ttftMs"`
	TPOTms    []float64 `json:"tpotMs"`
	MetSLOPct []float64 `json:"metSloPercent"`
}

func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return quantiles(s)
}

// quantiles summarises sorted seconds in milliseconds.
func quantiles(s []float64) Percentiles {
	q := func(p float64) float64 { return s[min(len(s)-1, int(math.Ceil(p*float64(len(s))))-1)] * 1000 }
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Percentiles{Mean: sum / float64(len(s)) * 1000, P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: s[len(s)-1] * 1000}
}

func (o Options) meets(r Record) bool {
	if r.Error != "" {
		return false
	}
	if o.SLOTTFT > 0 && r.TTFT > o.SLOTTFT.Seconds() {
		return false
	}
	if o.SLOITL > 0 && r.TPOT() > o.SLOITL.Seconds() {
		return false
	}
	return true
}

func summarize(recs []Record, gaps *gapSample, d time.Duration, o Options) *Summary {
	s := &Summary{URL: o.URL, Model: o.Model, Duration: d.Seconds(), Requests: len(recs), Errors: map[string]int{},
		SLOTTFTms: float64(o.SLOTTFT.Milliseconds()), SLOITLms: float64(o.SLOITL.Milliseconds())}
	switch {
	case o.Users > 0:
		s.Load = "users"
	case o.Source != nil:
		s.Load = "trace"
	case o.Constant:
		s.Load = "constant"
	default:
		s.Load = "poisson"
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Start < recs[j].Start })
	var ttft, tpot, e2e []float64
	out, met := 0, 0
	n := int(math.Ceil(d.Seconds()))
	s.Series = Series{Times: make([]float64, n), Sent: make([]float64, n), TTFTms: make([]float64, n), TPOTms: make([]float64, n), MetSLOPct: make([]float64, n)}
	okPer := make([]float64, n)
	metPer := make([]float64, n)
	for i := range n {
		s.Series.Times[i] = float64(i)
	}
	for _, r := range recs {
		b := min(n-1, max(0, int(r.Start)))
		s.Series.Sent[b]++
		if r.Error != "" {
			s.Failed++
			if len(s.Errors) < 5 || s.Errors[r.Error] > 0 {
				s.Errors[r.Error]++
			}
			continue
		}
		s.Succeeded++
		out += r.OutputTokens
		if r.OutputTokens < r.OSL {
			s.ShortAnswers++
		}
		ttft = append(ttft, r.TTFT)
		e2e = append(e2e, r.E2E)
		if t := r.TPOT(); t > 0 {
			tpot = append(tpot, t)
			s.Series.TPOTms[b] += t * 1000
		}
		s.Series.TTFTms[b] += r.TTFT * 1000
		okPer[b]++
		if o.meets(r) {
			met++
			metPer[b]++
		}
	}
	for i := range n {
		if okPer[i] > 0 {
			s.Series.TTFTms[i] /= okPer[i]
			s.Series.TPOTms[i] /= okPer[i]
		}
		if s.Series.Sent[i] > 0 {
			s.Series.MetSLOPct[i] = 100 * metPer[i] / s.Series.Sent[i]
		}
	}
	s.TTFT, s.ITL, s.TPOT, s.E2E = percentiles(ttft), gaps.percentiles(), percentiles(tpot), percentiles(e2e)
	if d > 0 {
		s.RequestsPerSec = float64(s.Succeeded) / d.Seconds()
		s.OutputTokensPerSec = float64(out) / d.Seconds()
		s.Goodput = float64(met) / d.Seconds()
	}
	if len(recs) > 0 {
		s.Attainment = float64(met) / float64(len(recs))
	}
	return s
}

// SLOText states the SLO the run was judged by; without one, every
// request that completed counts.
func (s *Summary) SLOText() string {
	var parts []string
	if s.SLOTTFTms > 0 {
		parts = append(parts, fmt.Sprintf("TTFT <= %.0f ms", s.SLOTTFTms))
	}
	if s.SLOITLms > 0 {
		parts = append(parts, fmt.Sprintf("TPOT <= %.0f ms", s.SLOITLms))
	}
	if len(parts) == 0 {
		return "no SLO given (--slo-ttft, --slo-itl): every completed request counts"
	}
	return strings.Join(parts, ", ")
}
