package perf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// maxNormalOracle integrates E[max of n standard normals] =
// integral of x n phi(x) Phi(x)^(n-1) dx on a fine grid.
func maxNormalOracle(n int) float64 {
	const lo, hi, steps = -10.0, 10.0, 200000
	h := (hi - lo) / steps
	sum := 0.0
	for i := 0; i <= steps; i++ {
		x := lo + float64(i)*h
		phi := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
		cdf := 0.5 * math.Erfc(-x/math.Sqrt2)
		w := 1.0
		if i == 0 || i == steps {
			w = 0.5
		}
		sum += w * x * float64(n) * phi * math.Pow(cdf, float64(n-1))
	}
	return sum * h
}

func TestExpectedMaxNormal(t *testing.T) {
	if got := expectedMaxNormal(1); got != 0 {
		t.Errorf("one draw: %g, want 0", got)
	}
	for _, n := range []int{2, 3, 4, 8, 16, 32, 64, 256, 1024} {
		got, want := expectedMaxNormal(float64(n)), maxNormalOracle(n)
		if math.Abs(got-want) > 0.03 {
			t.Errorf("n=%d: %.4f, integration gives %.4f", n, got, want)
		}
	}
}

// busiestOracle routes tokens at random (each token's topk distinct
// experts) over experts spread evenly on ranks, and averages the busiest
// rank's active experts and picks over trials.
func busiestOracle(rng *rand.Rand, tokens, topk, experts, ranks, trials int) (active, picks float64) {
	per := experts / ranks
	for range trials {
		hit := make([]bool, experts)
		act, pk := make([]int, ranks), make([]int, ranks)
		for range tokens {
			picked := make(map[int]bool, topk)
			for len(picked) < topk {
				e := rng.IntN(experts)
				if picked[e] {
					continue
				}
				picked[e] = true
				pk[e/per]++
				if !hit[e] {
					hit[e] = true
					act[e/per]++
				}
			}
		}
		ma, mp := 0, 0
		for r := range ranks {
			ma, mp = max(ma, act[r]), max(mp, pk[r])
		}
		active += float64(ma)
		picks += float64(mp)
	}
	return active / float64(trials), picks / float64(trials)
}

func TestBusiestRankMatchesRandomRouting(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, c := range []struct{ tokens, topk, experts, ranks int }{
		{1, 8, 128, 8}, {4, 8, 128, 8}, {8, 8, 128, 8}, {32, 8, 128, 8}, {256, 8, 128, 8},
		{1, 8, 256, 8}, {8, 8, 256, 8}, {64, 8, 256, 8}, {8, 8, 256, 4}, {8, 8, 256, 2},
		{16, 8, 256, 32}, {4, 4, 128, 4}, {8, 4, 32, 4}, {2, 10, 512, 16},
	} {
		t.Run(fmt.Sprintf("%dtok_top%d_of%d_ep%d", c.tokens, c.topk, c.experts, c.ranks), func(t *testing.T) {
			s := MoEShape{Tokens: float64(c.tokens), TopK: float64(c.topk), Experts: float64(c.experts), Ranks: float64(c.ranks)}
			a, p := s.busiestRank()
			a, p = a/float64(c.ranks), p/float64(c.ranks)
			wa, wp := busiestOracle(rng, c.tokens, c.topk, c.experts, c.ranks, 3000)
			// The normal approximation of small counts: within 12% (it reads
			// 8-10% low at one or two tokens, where the counts are smallest).
			if math.Abs(a/wa-1) > 0.12 || math.Abs(p/wp-1) > 0.12 {
				t.Errorf("busiest rank %.2f experts / %.2f picks, simulated %.2f / %.2f", a, p, wa, wp)
			}
			// Never below the mean rank.
			if a*float64(c.ranks) < s.ActiveExperts()-1e-9 || p < s.Tokens*s.TopK/float64(c.ranks)-1e-9 {
				t.Errorf("busiest rank below the mean: %.2f experts, %.2f picks", a, p)
			}
		})
	}
}

func TestBusiestRankOnlyUnderExpertParallelism(t *testing.T) {
	for _, s := range []MoEShape{
		{Tokens: 8, TopK: 8, Experts: 128},
		{Tokens: 8, TopK: 8, Experts: 128, Ranks: 1},
		{Tokens: 8, TopK: 8, Experts: 128, Ranks: 8, Balanced: true},
		{Tokens: 0, TopK: 8, Experts: 128, Ranks: 8},
	} {
		a, p := s.busiestRank()
		if a != s.ActiveExperts() || p != s.Tokens*s.TopK {
			t.Errorf("%+v: %g experts %g picks, want the mean %g and %g", s, a, p, s.ActiveExperts(), s.Tokens*s.TopK)
		}
	}
}

// Under expert parallelism a worker's decode pays for its busiest rank;
// with the same weights per GPU split by tensor parallelism every GPU
// reads every active expert's slice, the mean. Prompts of thousands of
// tokens reach every expert on every rank either way.
func TestWorkerPricesBusiestExpertRank(t *testing.T) {
	c := catalog.MustDefault()
	m, err := c.Model("Qwen/Qwen3-235B-A22B")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Device("h200_sxm", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, withKernel := range []bool{true, false} {
		p := MustDefaultParams().Clone()
		if !withKernel {
			for _, f := range p.Families {
				f.MoE = nil
			}
		}
		worker := func(ep int) *Worker {
			w, err := NewWorker(Config{Model: m, Device: d, Backend: TRTLLM, Weights: catalog.FP8, TP: 8, EP: ep}, p)
			if err != nil {
				t.Fatal(err)
			}
			return w
		}
		tp, ep := worker(1), worker(8)
		for _, c := range []struct {
			tokens   float64
			min, max float64 // the EP8 worker's MoE time over the TP8 worker's
		}{
			{1, 1.5, 3.5},
			{8, 1.1, 1.8},
			{8192, 1, 1.03},
		} {
			r := ep.moeCompute(c.tokens, false) / tp.moeCompute(c.tokens, false)
			if r < c.min || r > c.max {
				t.Errorf("kernel summary %v, %v tokens: expert-parallel MoE takes %.2f x the tensor-parallel, want %.2f-%.2f", withKernel, c.tokens, r, c.min, c.max)
			}
		}
	}
}
