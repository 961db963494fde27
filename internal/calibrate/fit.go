package calibrate

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/optimize"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
)

// knob is one fitted parameter: where it lives and its allowed range.
type knob struct {
	name   string
	ptr    func(p *perf.Params) *float64
	lo, hi float64
	// fam and prec address a GEMM efficiency (map values are not addressable).
	fam  string
	prec catalog.Precision
}

func famKnob(fam, field string, lo, hi float64) knob {
	return knob{name: "families." + fam + "." + field, lo: lo, hi: hi, ptr: func(p *perf.Params) *float64 {
		f := p.Families[fam]
		switch field {
		case "gemmBandwidth":
			return &f.GEMMBandwidth
		case "attentionCompute":
			return &f.AttentionCompute
		case "attentionBandwidth":
			return &f.AttentionBandwidth
		}
		panic("unknown family field " + field)
	}}
}

// gemmKnob fits a GEMM efficiency.
func gemmKnob(fam string, prec catalog.Precision) knob {
	return knob{name: "families." + fam + ".gemm." + string(prec), lo: 0.2, hi: 0.95, fam: fam, prec: prec}
}

func beKnob(b perf.Backend, field string, lo, hi float64) knob {
	return knob{name: "backends." + string(b) + "." + field, lo: lo, hi: hi, ptr: func(p *perf.Params) *float64 {
		bp := p.Backends[b]
		switch field {
		case "stepOverheadMs":
			return &bp.StepOverheadMs
		case "prefillOverheadMs":
			return &bp.PrefillOverheadMs
		case "perSeqOverheadUs":
			return &bp.PerSeqOverheadUs
		case "allReduceLatencyUs":
			return &bp.AllReduceLatencyUs
		case "frontendOverheadMs":
			return &bp.FrontendOverheadMs
		case "frontendPerTokenUs":
			return &bp.FrontendPerTokenUs
		}
		panic("unknown backend field " + field)
	}}
}

// Knobs lists what the calibration fits: per-architecture kernel
// efficiencies, per-backend overheads and the interconnect efficiency. No
// knob is specific to a model, a row or a configuration.
func Knobs() []knob {
	return append(append(gemmKnobs(), attentionKnobs()...), servingKnobs()...)
}

// Knob groups a fit can take (FitOptions.Knobs).
const (
	KnobsGEMM      = "gemm"
	KnobsAttention = "attention"
	KnobsServing   = "serving"
)

// KnobGroups lists them.
var KnobGroups = []string{KnobsGEMM, KnobsAttention, KnobsServing}

// gemmKnobs are the per-architecture GEMM efficiencies. gpuplane calibrate
// kernels fits them to the measured tables; fitted here too, they absorb
// errors of the serving terms.
func gemmKnobs() []knob {
	return []knob{
		gemmKnob(catalog.Hopper, catalog.BF16), gemmKnob(catalog.Hopper, catalog.FP8), famKnob(catalog.Hopper, "gemmBandwidth", 0.5, 0.95),
		gemmKnob(catalog.Blackwell, catalog.FP8), gemmKnob(catalog.Blackwell, catalog.FP4), famKnob(catalog.Blackwell, "gemmBandwidth", 0.5, 0.95),
		gemmKnob(catalog.Ampere, catalog.BF16), famKnob(catalog.Ampere, "gemmBandwidth", 0.5, 0.95),
		gemmKnob(catalog.Ada, catalog.FP8), famKnob(catalog.Ada, "gemmBandwidth", 0.5, 0.95),
	}
}

// attentionKnobs are the attention efficiencies of the families the
// serving runs measure.
func attentionKnobs() []knob {
	return []knob{
		famKnob(catalog.Hopper, "attentionCompute", 0.15, 0.9), famKnob(catalog.Hopper, "attentionBandwidth", 0.3, 0.95),
		famKnob(catalog.Blackwell, "attentionCompute", 0.15, 0.9), famKnob(catalog.Blackwell, "attentionBandwidth", 0.3, 0.95),
	}
}

// servingKnobs are what lies between op-level cost and a measured run: the
// backends' overheads and the all-reduce's bus efficiency.
func servingKnobs() []knob {
	var ks []knob
	for _, b := range perf.Backends {
		ks = append(ks, beKnob(b, "stepOverheadMs", 0.05, 20), beKnob(b, "prefillOverheadMs", 0.01, 50),
			beKnob(b, "perSeqOverheadUs", 0.5, 200), beKnob(b, "allReduceLatencyUs", 1, 60),
			beKnob(b, "frontendOverheadMs", 0.2, 100), beKnob(b, "frontendPerTokenUs", 0.01, 50))
	}
	ks = append(ks, knob{name: "comm.allReduceBusEfficiency", lo: 0.3, hi: 1.5,
		ptr: func(p *perf.Params) *float64 { return &p.Comm.AllReduceBusEfficiency }})
	return ks
}

func (k knob) get(p *perf.Params) float64 {
	if k.ptr != nil {
		return *k.ptr(p)
	}
	return p.Families[k.fam].GEMM[k.prec]
}

func (k knob) set(p *perf.Params, v float64) {
	v = math.Min(k.hi, math.Max(k.lo, v))
	if k.ptr != nil {
		*k.ptr(p) = v
		return
	}
	p.Families[k.fam].GEMM[k.prec] = v
}

// FitOptions bound the optimisation.
type FitOptions struct {
	// MaxEvaluations caps objective evaluations (each predicts every case).
	MaxEvaluations int
	// TTFTWeight weighs TTFT errors against TPOT and throughput errors
	// (default 1). TTFT is the harder target, so the calibration uses more.
	TTFTWeight float64
	// Harness is the benchmark client the rows are predicted under
	// (default DefaultHarness).
	Harness serving.Harness
	// Loss is what the fit minimises: LossMAPE (the default, the metric the
	// calibration is judged by) or LossLog.
	Loss string
	// Knobs lists the knob groups fitted (KnobGroups, comma-separated;
	// default all). Leaving out gemm keeps the GEMM efficiencies as the
	// parameters give them, e.g. fitted to kernel tables.
	Knobs string
	// Progress, when set, is called after each evaluation.
	Progress func(evals int, loss float64)
}

// ParseKnobs reads a comma-separated list of knob groups ("" is all).
func ParseKnobs(s string) ([]knob, error) {
	if strings.TrimSpace(s) == "" {
		return Knobs(), nil
	}
	var ks []knob
	seen := map[string]bool{}
	for _, g := range strings.Split(s, ",") {
		g = strings.TrimSpace(g)
		if seen[g] {
			continue
		}
		seen[g] = true
		switch g {
		case KnobsGEMM:
			ks = append(ks, gemmKnobs()...)
		case KnobsAttention:
			ks = append(ks, attentionKnobs()...)
		case KnobsServing:
			ks = append(ks, servingKnobs()...)
		default:
			return nil, fmt.Errorf("knobs: %q is not one of %s (comma-separated)", g, strings.Join(KnobGroups, ", "))
		}
	}
	return ks, nil
}

// FitResult is the outcome of a fit.
type FitResult struct {
	Params      *perf.Params
	Loss        float64
	InitialLoss float64
	Evaluations int
}

// Fit minimises the mean absolute percentage error of TTFT, TPOT and
// throughput over the cases by Nelder-Mead in log-parameter space (which
// keeps every parameter positive), starting from start.
func Fit(env estimate.Env, start *perf.Params, cases []Case, opt FitOptions) (*FitResult, error) {
	if len(cases) == 0 {
		return nil, fmt.Errorf("fit: no calibration cases")
	}
	if opt.Harness == "" {
		opt.Harness = DefaultHarness
	}
	if opt.MaxEvaluations <= 0 {
		opt.MaxEvaluations = 1500
	}
	knobs, err := ParseKnobs(opt.Knobs)
	if err != nil {
		return nil, err
	}
	lossOf, err := lossFunc(opt.Loss)
	if err != nil {
		return nil, err
	}
	// One Nelder-Mead run needs its simplex (one evaluation a knob, plus
	// one) and a step; fewer evaluations would fit nothing.
	if least := len(knobs) + 3; opt.MaxEvaluations < least {
		return nil, fmt.Errorf("fit: max evaluations %d cannot build the simplex over %d parameters; give at least %d (--max-evals)",
			opt.MaxEvaluations, len(knobs), least)
	}
	x0 := make([]float64, len(knobs))
	for i, k := range knobs {
		x0[i] = math.Log(k.get(start))
	}
	evals := 0
	objective := func(x []float64) float64 {
		p := start.Clone()
		for i, k := range knobs {
			k.set(p, math.Exp(x[i]))
		}
		e := env
		e.Params = p
		l := weightedLoss(PredictWith(e, cases, opt.Harness), opt.TTFTWeight, lossOf)
		evals++
		if opt.Progress != nil {
			opt.Progress(evals, l)
		}
		return l
	}
	initial := objective(x0)
	// Nelder-Mead shrinks its simplex as it goes; in 30-odd dimensions it
	// then crawls. Restarting from the best point with a fresh simplex,
	// wide first and narrower later, finds far better minima per evaluation.
	// A small budget runs fewer restarts, never none.
	x, f := x0, initial
	sizes := []float64{0.4, 0.2, 0.1, 0.05}
	for i, size := range sizes {
		left := opt.MaxEvaluations - evals
		budget := max(opt.MaxEvaluations/len(sizes), 2*len(knobs))
		if i == len(sizes)-1 || budget > left || left-budget < len(knobs)+2 {
			budget = left
		}
		if budget < len(knobs)+2 {
			break
		}
		res, err := optimize.Minimize(optimize.Problem{Func: objective}, x,
			&optimize.Settings{FuncEvaluations: budget, Converger: &optimize.FunctionConverge{Absolute: 1e-5, Iterations: 100}},
			&optimize.NelderMead{SimplexSize: size})
		if err != nil && res == nil {
			return nil, fmt.Errorf("fit: %w", err)
		}
		if res.F < f {
			x, f = res.X, res.F
		}
	}
	best := start.Clone()
	for i, k := range knobs {
		k.set(best, math.Exp(x[i]))
	}
	return &FitResult{Params: best, Loss: f, InitialLoss: initial, Evaluations: evals}, nil
}

// Loss is the mean absolute percentage error (as a fraction) over every
// measured quantity: the metric the calibration is judged by. A case the
// model cannot evaluate counts as a 300% error so the fit avoids it.
func Loss(preds []Prediction) float64 { return weightedLoss(preds, 1, relErr) }

// The fit's objectives (FitOptions.Loss).
const (
	// LossMAPE is the mean absolute percentage error. It punishes a
	// prediction too high without bound and one too low by at most 100%,
	// so minimising it leans low: fitted on scattered runs it predicts
	// faster than measured more often than not.
	LossMAPE = "mape"
	// LossLog is the mean absolute log ratio |ln(predicted/measured)|,
	// which weighs twice too fast like twice too slow.
	LossLog = "log"
)

// Losses lists the objectives, for flags and errors.
var Losses = []string{LossMAPE, LossLog}

func lossFunc(name string) (func(pred, meas float64) float64, error) {
	switch name {
	case "", LossMAPE:
		return relErr, nil
	case LossLog:
		return logErr, nil
	}
	return nil, fmt.Errorf("loss: %q is not one of %s", name, strings.Join(Losses, ", "))
}

// relErr is |pred-meas|/meas, the error MAPE averages (ape in percent).
func relErr(pred, meas float64) float64 { return math.Abs(pred-meas) / meas }

// logErr is |ln(pred/meas)|; a prediction of zero or less, which no model
// answer should be, counts as the 300% of a failed case.
func logErr(pred, meas float64) float64 {
	if pred <= 0 {
		return 3
	}
	return math.Abs(math.Log(pred / meas))
}

func weightedLoss(preds []Prediction, ttftWeight float64, errOf func(pred, meas float64) float64) float64 {
	if ttftWeight <= 0 {
		ttftWeight = 1
	}
	var sum, n float64
	term := func(pred, meas, w float64) {
		if meas <= 0 {
			return
		}
		sum += w * errOf(pred, meas)
		n += w
	}
	for _, p := range preds {
		if p.Err != "" {
			sum += 3
			n++
			continue
		}
		term(p.PredTTFTms, p.TTFTms, ttftWeight)
		term(p.PredTPOTms, p.TPOTms, 1)
		term(p.PredTPS, p.OutputTPS, 1)
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
