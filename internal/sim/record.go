package sim

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/slo"
	"github.com/gpuplane/gpuplane/internal/workload"
)

// Percentiles of a latency in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// At is the value at percentile pct, interpolated between the three kept
// (below p50: p50; above p99: p99); 0 for pct <= 0.
func (p Percentiles) At(pct float64) float64 {
	switch {
	case pct <= 0:
		return 0
	case pct <= 50:
		return p.P50
	case pct <= 90:
		return p.P50 + (p.P90-p.P50)*(pct-50)/40
	case pct <= 99:
		return p.P90 + (p.P99-p.P90)*(pct-90)/9
	}
	return p.P99
}

// Point is one interval of the time series.
type Point struct {
	Start       float64        `json:"start_s"`
	Arrivals    int            `json:"arrivals"`
	Completions int            `json:"completions"`
	QueueDepth  int            `json:"queue_depth"`
	Workers     map[string]int `json:"workers"`
	TTFTms      Percentiles    `json:"ttft_ms"`
	ITLms       Percentiles    `json:"itl_ms"`
	KVUse       float64        `json:"kv_use"`
	// PoolKVUse is each pool's mean KV-cache use; PoolInFlight its requests
	// running or waiting, in its engines or their API servers (for a prefill
	// pool: those without a first token).
	PoolKVUse    map[string]float64 `json:"pool_kv_use"`
	PoolInFlight map[string]int     `json:"pool_in_flight"`
	Attainment   float64            `json:"slo_attainment"`
	// Means of the interval: sizes of the arrivals, latencies of the completions.
	ISLMean    float64 `json:"isl_mean"`
	OSLMean    float64 `json:"osl_mean"`
	TTFTMeanms float64 `json:"ttft_mean_ms"`
	ITLMeanms  float64 `json:"itl_mean_ms"`
}

// Summary is a run's outcome.
type Summary struct {
	Requests      int         `json:"requests"`
	Completed     int         `json:"completed"`
	Unfinished    int         `json:"unfinished"`
	Rejected      int         `json:"rejected"`
	SLOAttainment float64     `json:"slo_attainment"`
	GoodputRPS    float64     `json:"goodput_rps"`
	TTFTms        Percentiles `json:"ttft_ms"`
	TTFTMeanms    float64     `json:"ttft_mean_ms"`
	E2EMeanms     float64     `json:"e2e_mean_ms"`
	ITLMeanms     float64     `json:"itl_mean_ms"`
	ITLms         Percentiles `json:"itl_ms"`
	E2Ems         Percentiles `json:"e2e_ms"`
	GPUHours      float64     `json:"gpu_hours"`
	// SLO judges the run's TTFT and ITL at the stated percentiles.
	SLO        *Verdict `json:"slo,omitempty"`
	SimSeconds float64  `json:"simulated_seconds"`
	Series     []Point  `json:"series"`
}

// Verdict is the SLO judged on a statistic of the whole run.
type Verdict struct {
	TTFTStat     string  `json:"ttft_stat"` // "mean", "p90", ...
	TTFTms       float64 `json:"ttft_ms"`
	TTFTTargetms float64 `json:"ttft_target_ms"`
	ITLStat      string  `json:"itl_stat"`
	ITLms        float64 `json:"itl_ms"`
	ITLTargetms  float64 `json:"itl_target_ms"`
	Met          bool    `json:"met"`
}

// String is the verdict with the values judged and their targets.
func (v Verdict) String() string {
	word := "met"
	if !v.Met {
		word = "MISSED"
	}
	return fmt.Sprintf("%s: ttft %s %.0f ms (target %g), itl %s %.1f ms (target %g)", word, v.TTFTStat, v.TTFTms, v.TTFTTargetms, v.ITLStat, v.ITLms, v.ITLTargetms)
}

type recorder struct {
	cfg                      Config
	arrivals, completed, met int
	rejects                  int
	lastArrival              float64
	ttft, itl, e2e           *hist
	ttftSum, e2eSum, itlSum  float64
	itlN                     int
	cur                      Point
	curTTFT, curITL          *hist
	curMet                   int
	curISL, curOSL           float64
	curTTFTSum, curITLSum    float64
	curITLN                  int
	series                   []Point
	intervalEnd              float64
	// ttftFloor is the least TTFT a request sees (perf.Worker.TTFTFloor).
	ttftFloor float64
}

func newRecorder(cfg Config) *recorder {
	r := &recorder{cfg: cfg, ttft: newHist(), itl: newHist(), e2e: newHist(), intervalEnd: cfg.Interval}
	r.resetInterval(0)
	return r
}

func (r *recorder) resetInterval(start float64) {
	r.cur = Point{Start: start}
	r.curTTFT, r.curITL, r.curMet = newHist(), newHist(), 0
	r.curISL, r.curOSL, r.curTTFTSum, r.curITLSum, r.curITLN = 0, 0, 0, 0, 0
}

// tick closes every interval that ends at or before now.
func (r *recorder) tick(s *Sim, now float64) {
	for now >= r.intervalEnd {
		r.closeInterval(s)
		r.resetInterval(r.intervalEnd)
		r.intervalEnd += r.cfg.Interval
	}
}

func (r *recorder) closeInterval(s *Sim) {
	p := r.cur
	p.Workers = map[string]int{}
	p.PoolKVUse = map[string]float64{}
	p.PoolInFlight = map[string]int{}
	var kv float64
	n := 0
	for _, pl := range s.pools {
		p.Workers[pl.spec.Name] = pl.replicas()
		var pkv float64
		pn := 0
		for _, w := range pl.workers {
			if !w.gone {
				p.QueueDepth += w.waiting() + w.inFront
				kv += w.kvUsed()
				pkv += w.kvUsed()
				p.PoolInFlight[pl.spec.Name] += w.load()
				n++
				pn++
			}
		}
		if pn > 0 {
			p.PoolKVUse[pl.spec.Name] = pkv / float64(pn)
		}
	}
	p.QueueDepth += len(s.waiting)
	if n > 0 {
		p.KVUse = kv / float64(n)
	}
	p.TTFTms, p.ITLms = pct(r.curTTFT), pct(r.curITL)
	if p.Completions > 0 {
		p.Attainment = float64(r.curMet) / float64(p.Completions)
		p.TTFTMeanms = r.curTTFTSum / float64(p.Completions)
	}
	if p.Arrivals > 0 {
		p.ISLMean, p.OSLMean = r.curISL/float64(p.Arrivals), r.curOSL/float64(p.Arrivals)
	}
	if r.curITLN > 0 {
		p.ITLMeanms = r.curITLSum / float64(r.curITLN)
	}
	r.series = append(r.series, p)
}

func (r *recorder) arrived(a workload.Request) {
	r.arrivals++
	r.cur.Arrivals++
	r.curISL += float64(a.ISL)
	r.curOSL += float64(a.OSL)
	r.lastArrival = a.At
}

func (r *recorder) rejected(float64) { r.rejects++ }

// finished records a completed request and returns its per-request record.
func (r *recorder) finished(q *request, t float64) Record {
	// The TTFT floor is latency on the request's path, not engine time:
	// it delays the first token the user sees, not the engine's work.
	ttft := max(q.first-q.arrival, r.ttftFloor)
	itl := 0.0
	if q.OSL > 1 {
		itl = (t - q.first) / float64(q.OSL-1)
	}
	r.completed++
	r.cur.Completions++
	r.ttft.add(ttft * 1e3)
	r.curTTFT.add(ttft * 1e3)
	r.curTTFTSum += ttft * 1e3
	r.e2e.add((t - q.arrival) * 1e3)
	r.ttftSum += ttft * 1e3
	r.e2eSum += (t - q.arrival) * 1e3
	if q.OSL > 1 {
		r.itl.add(itl * 1e3)
		r.itlSum += itl * 1e3
		r.itlN++
		r.curITL.add(itl * 1e3)
		r.curITLSum += itl * 1e3
		r.curITLN++
	}
	if (r.cfg.TTFTSLO <= 0 || ttft <= r.cfg.TTFTSLO) && (r.cfg.ITLSLO <= 0 || itl <= r.cfg.ITLSLO) {
		r.met++
		r.curMet++
	}
	return Record{ID: q.ID, ArrivalS: q.arrival, ISL: q.ISL, OSL: q.OSL, TTFTms: ttft * 1e3, ITLms: itl * 1e3, E2E: (t - q.arrival) * 1e3}
}

func pct(h *hist) Percentiles {
	return Percentiles{P50: h.quantile(0.5), P90: h.quantile(0.9), P99: h.quantile(0.99)}
}

func (r *recorder) summary(s *Sim) *Summary {
	sum := &Summary{Requests: r.arrivals, Completed: r.completed, Rejected: r.rejects,
		Unfinished: r.arrivals - r.completed - r.rejects, TTFTms: pct(r.ttft), ITLms: pct(r.itl), E2Ems: pct(r.e2e),
		SimSeconds: s.now, Series: append([]Point(nil), r.series...)}
	if r.arrivals > 0 {
		sum.SLOAttainment = float64(r.met) / float64(r.arrivals)
	}
	if r.completed > 0 {
		sum.TTFTMeanms = r.ttftSum / float64(r.completed)
		sum.E2EMeanms = r.e2eSum / float64(r.completed)
	}
	if r.itlN > 0 {
		sum.ITLMeanms = r.itlSum / float64(r.itlN)
	}
	if s.now > 0 {
		sum.GoodputRPS = float64(r.met) / s.now
	}
	if (r.cfg.TTFTSLO > 0 || r.cfg.ITLSLO > 0) && r.completed > 0 {
		v := &Verdict{TTFTStat: slo.Stat(r.cfg.TTFTPercentile), TTFTms: sum.TTFTMeanms, TTFTTargetms: r.cfg.TTFTSLO * 1e3,
			ITLStat: slo.Stat(r.cfg.ITLPercentile), ITLms: sum.ITLMeanms, ITLTargetms: r.cfg.ITLSLO * 1e3}
		if r.cfg.TTFTPercentile > 0 {
			v.TTFTms = r.ttft.quantile(r.cfg.TTFTPercentile / 100)
		}
		if r.cfg.ITLPercentile > 0 {
			v.ITLms = r.itl.quantile(r.cfg.ITLPercentile / 100)
		}
		// Requests that never finished count against the SLO as missed.
		unfinished := r.arrivals - r.completed
		v.Met = unfinished == 0 && (v.TTFTTargetms <= 0 || v.TTFTms <= v.TTFTTargetms) && (v.ITLTargetms <= 0 || v.ITLms <= v.ITLTargetms)
		sum.SLO = v
	}
	for _, p := range s.pools {
		cfg := p.spec.Worker.Config()
		gpus := float64(cfg.WorkerGPUs())
		for _, w := range p.workers {
			end := math.Min(w.stopped, s.now)
			sum.GPUHours += gpus * math.Max(0, end-w.started) / 3600
		}
	}
	return sum
}
