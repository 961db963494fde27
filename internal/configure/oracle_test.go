package configure

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// oracle finds the best goodput per GPU on a small homogeneous pool by
// brute force: every TP, every worker split that fits, and for each a scan
// of the user count until the SLO breaks, all as whole-deployment runs.
func oracle(t *testing.T, r Request) (best float64, label string) {
	env := testEnv()
	n := r.Pool[0].Count
	dev, err := env.Catalog.Device(r.Pool[0].Device, "")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := env.Catalog.Model(r.Model)
	prec, err := catalog.ParsePrecision(r.Precision)
	if err != nil {
		t.Fatal(err)
	}
	worker := func(tp int) *perf.Worker {
		w, err := perf.NewWorker(perf.Config{Model: m, Device: dev, Backend: perf.VLLM, Weights: prec, TP: tp}, env.Params)
		if err != nil || w.CheckFit(r.ISL+r.OSL) != nil {
			return nil
		}
		return w
	}
	meets := func(res *serving.Result) bool {
		return res.TTFTms <= r.SLA.TTFTms && res.TPOTms <= r.SLA.ITLms
	}
	// scan raises users by 5% steps while the SLO holds, and returns the best tokens/s.
	scan := func(run func(users int) (*serving.Result, error)) float64 {
		bestTok, fails := 0.0, 0
		for u := 1; fails < 2 && u < 5000; u = max(u+1, u*21/20) {
			res, err := run(u)
			if err != nil {
				break
			}
			if meets(res) {
				bestTok, fails = max(bestTok, res.OutputTokensPerS), 0
			} else {
				fails++
			}
		}
		return bestTok
	}
	wl := func(u int) serving.Workload { return serving.Workload{ISL: r.ISL, OSL: r.OSL, Concurrency: u} }
	for tp := 1; tp <= n && tp <= dev.GPU.MaxTP(); tp *= 2 {
		w := worker(tp)
		if w == nil {
			continue
		}
		// One worker's best rate times the workers: agg workers are independent.
		tok := scan(func(u int) (*serving.Result, error) { return serving.Aggregated(w, 1, wl(u), serving.Options{}) })
		if g := tok / float64(tp); g > best {
			best, label = g, fmt.Sprintf("agg tp%d", tp)
		}
	}
	for tpP := 1; tpP <= n/2; tpP *= 2 {
		for tpD := 1; tpD <= n/2; tpD *= 2 {
			pw, dw := worker(tpP), worker(tpD)
			if pw == nil || dw == nil {
				continue
			}
			for np := 1; np*tpP < n; np++ {
				for nd := 1; np*tpP+nd*tpD <= n; nd++ {
					d := serving.Disagg{Prefill: pw, Decode: dw, PrefillWorkers: np, DecodeWorkers: nd, SameDomain: true}
					tok := scan(func(u int) (*serving.Result, error) { return serving.Disaggregated(d, wl(u), serving.Options{}) })
					if g := tok / float64(np*tpP+nd*tpD); g > best {
						best, label = g, fmt.Sprintf("disagg %d x tp%d + %d x tp%d", np, tpP, nd, tpD)
					}
				}
			}
		}
	}
	return best, label
}

// The search's winner is within a few percent of the brute-force optimum
// on random small problems, and never claims more than the oracle finds.
func TestSearchMatchesBruteForce(t *testing.T) {
	if testing.Short() {
		t.Skip("brute force takes seconds")
	}
	rng := rand.New(rand.NewPCG(7, 11))
	models := []string{"Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B"}
	gpus := []string{"h100_sxm", "l40s", "a100_80gb"}
	for i := range 6 {
		r := Request{Model: models[rng.IntN(len(models))], Precision: "fp8", Backend: "vllm",
			ISL: []int{512, 1000, 2000}[rng.IntN(3)], OSL: []int{128, 300}[rng.IntN(2)],
			SLA:  SLA{TTFTms: float64(300 + 100*rng.IntN(10)), ITLms: float64(20 + 5*rng.IntN(8))},
			Pool: []PoolEntry{{Device: gpus[rng.IntN(len(gpus))], Count: 4}}}
		if r.Pool[0].Device == "a100_80gb" {
			r.Precision = "bf16"
		}
		t.Run(fmt.Sprintf("case%d-%s-%s-%d-%d", i, r.Model, r.Pool[0].Device, r.ISL, r.OSL), func(t *testing.T) {
			want, label := oracle(t, r)
			res := mustSearch(t, r)
			got := res.Best.TokensPerSPerGPU
			t.Logf("search %s: %.1f tok/s/GPU; oracle %s: %.1f", Describe(*res.Best), got, label, want)
			if want == 0 {
				if res.Best.MeetsSLO {
					t.Errorf("oracle finds nothing inside the SLO but the search does")
				}
				return
			}
			if !res.Best.MeetsSLO {
				t.Fatalf("oracle meets the SLO with %s, search does not", label)
			}
			if got < 0.95*want {
				t.Errorf("search reaches %.1f tok/s/GPU, %.0f%% of the oracle's %.1f", got, 100*got/want, want)
			}
			if got > 1.06*want {
				t.Errorf("search claims %.1f tok/s/GPU, above the brute-force optimum %.1f", got, want)
			}
		})
	}
}
