package calibrate

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// Prediction pairs a case with the model's answer.
type Prediction struct {
	Case
	PredTTFTms, PredTPOTms, PredTPS float64
	Err                             string
}

// Stats are mean absolute percentage errors over a set of cases, and how
// one-sided those errors are.
type Stats struct {
	Group    string  `json:"group"`
	N        int     `json:"n"`
	Failed   int     `json:"failed"`
	TTFTMAPE float64 `json:"ttft_mape_pct"`
	TPOTMAPE float64 `json:"tpot_mape_pct"`
	TPSMAPE  float64 `json:"throughput_mape_pct,omitempty"`
	// The optimistic shares are the percentage of runs predicted faster
	// than measured: a lower TTFT or TPOT, a higher throughput (a tie
	// counts half); nil where no run measured it. Near 50% the errors fall
	// on both sides; near 100% the model promises what the hardware does
	// not give, and sizing from it under-provisions.
	TTFTOptimistic *float64 `json:"ttft_optimistic_pct,omitempty"`
	TPOTOptimistic *float64 `json:"tpot_optimistic_pct,omitempty"`
	TPSOptimistic  *float64 `json:"throughput_optimistic_pct,omitempty"`
	nTTFT          int
	nTPOT          int
	nTPS           int
	fast           [3]float64 // runs predicted faster: TTFT, TPOT, throughput
}

func (s *Stats) add(p Prediction) {
	s.N++
	if p.Err != "" {
		s.Failed++
		return
	}
	if p.TTFTms > 0 {
		s.TTFTMAPE += ape(p.PredTTFTms, p.TTFTms)
		s.fast[0] += below(p.PredTTFTms, p.TTFTms)
		s.nTTFT++
	}
	if p.TPOTms > 0 {
		s.TPOTMAPE += ape(p.PredTPOTms, p.TPOTms)
		s.fast[1] += below(p.PredTPOTms, p.TPOTms)
		s.nTPOT++
	}
	if p.OutputTPS > 0 {
		s.TPSMAPE += ape(p.PredTPS, p.OutputTPS)
		s.fast[2] += below(p.OutputTPS, p.PredTPS)
		s.nTPS++
	}
}

func (s *Stats) close() {
	div := func(v float64, n int) float64 {
		if n == 0 {
			return 0
		}
		return v / float64(n)
	}
	s.TTFTMAPE, s.TPOTMAPE, s.TPSMAPE = div(s.TTFTMAPE, s.nTTFT), div(s.TPOTMAPE, s.nTPOT), div(s.TPSMAPE, s.nTPS)
	share := func(i, n int) *float64 {
		if n == 0 {
			return nil
		}
		v := 100 * s.fast[i] / float64(n)
		return &v
	}
	s.TTFTOptimistic, s.TPOTOptimistic, s.TPSOptimistic = share(0, s.nTTFT), share(1, s.nTPOT), share(2, s.nTPS)
}

// below is 1 when a < b, a half when they are equal, else 0.
func below(a, b float64) float64 {
	switch {
	case a < b:
		return 1
	case a == b:
		return 0.5
	}
	return 0
}

func ape(pred, meas float64) float64 { return relErr(pred, meas) * 100 }

// Report summarises predictions.
type Report struct {
	Overall    Stats        `json:"overall"`
	DenseAgg   Stats        `json:"dense_agg"`
	MoEAgg     Stats        `json:"moe_agg"`
	Disagg     Stats        `json:"disagg"`
	MaxTput    Stats        `json:"max_throughput"`
	Groups     []Stats      `json:"groups"`
	Skipped    int          `json:"skipped"`
	Prediction []Prediction `json:"-"`
}

// DefaultHarness is how the calibration assumes the measured runs were
// taken: every user fires at once and each sends serving.BurstRounds
// requests, all of them measured. One harness serves every row that does
// not declare its own.
const DefaultHarness = serving.Burst

// Predict runs every case through the estimator under DefaultHarness, on
// all cores.
func Predict(env estimate.Env, cases []Case) []Prediction {
	return PredictWith(env, cases, DefaultHarness)
}

// PredictWith runs every case through the estimator as harness h measures,
// except cases that declare their own harness.
func PredictWith(env estimate.Env, cases []Case, h serving.Harness) []Prediction {
	out := make([]Prediction, len(cases))
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(cases) {
					return
				}
				out[i] = predictOne(env, cases[i], h)
			}
		}()
	}
	wg.Wait()
	return out
}

func predictOne(env estimate.Env, c Case, h serving.Harness) Prediction {
	p := Prediction{Case: c}
	q := c.Query
	if c.Harness != "" {
		h = c.Harness
	}
	opt := serving.Options{Harness: h}
	if c.Source == "max-throughput" {
		n, err := estimate.MaxConcurrency(env, q)
		if err != nil {
			p.Err = err.Error()
			return p
		}
		if n < 1 {
			p.Err = "model does not fit"
			return p
		}
		q.Concurrency = n
		opt = serving.Options{Rounds: 3}
	}
	out, err := estimate.Run(env, q, opt)
	if err != nil {
		p.Err = err.Error()
		return p
	}
	p.PredTTFTms, p.PredTPOTms, p.PredTPS = out.TTFTms, out.TPOTms, out.OutputTokensPerS
	return p
}

// Summarise groups predictions into a report.
func Summarise(preds []Prediction, skipped int) Report {
	r := Report{Overall: Stats{Group: "overall"}, DenseAgg: Stats{Group: "dense agg"}, MoEAgg: Stats{Group: "moe agg"},
		Disagg: Stats{Group: "disagg"}, MaxTput: Stats{Group: "max-throughput"}, Skipped: skipped, Prediction: preds}
	groups := map[string]*Stats{}
	for _, p := range preds {
		g := groups[p.Group()]
		if g == nil {
			g = &Stats{Group: p.Group()}
			groups[p.Group()] = g
		}
		g.add(p)
		switch {
		case p.Source == "max-throughput":
			r.MaxTput.add(p)
			continue
		case p.Mode == "disagg":
			r.Disagg.add(p)
		case p.Dense:
			r.DenseAgg.add(p)
		default:
			r.MoEAgg.add(p)
		}
		r.Overall.add(p)
	}
	for _, s := range []*Stats{&r.Overall, &r.DenseAgg, &r.MoEAgg, &r.Disagg, &r.MaxTput} {
		s.close()
	}
	for _, g := range groups {
		g.close()
		r.Groups = append(r.Groups, *g)
	}
	sort.Slice(r.Groups, func(i, j int) bool { return r.Groups[i].Group < r.Groups[j].Group })
	return r
}

// String renders a short text summary of the quantities the group measured.
func (s Stats) String() string {
	out := fmt.Sprintf("%-16s n=%-4d failed=%-3d", s.Group, s.N, s.Failed)
	if s.nTTFT > 0 {
		out += fmt.Sprintf(" TTFT MAPE %5.1f%%", s.TTFTMAPE)
	}
	if s.nTPOT > 0 {
		out += fmt.Sprintf("  TPOT MAPE %5.1f%%", s.TPOTMAPE)
	}
	if s.nTPS > 0 {
		out += fmt.Sprintf("  throughput MAPE %5.1f%%", s.TPSMAPE)
	}
	return out
}
