package calibrate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuplane/gpuplane/internal/perf"
)

// GridRow is one measured aggregated run, read whether or not the model
// can predict it: a run the model cannot express can still be the best
// choice of its grid, and a pick that cannot find it falls short of it.
type GridRow struct {
	ID                      string
	Grid                    string // system/backend/model/precision/ISLxOSL
	TP, PP, DP, Concurrency int
	OSL                     int
	TTFTms, TPOTms          float64
}

// GPUs is the row's GPU count: attention data parallelism multiplies
// the tensor-parallel group, as the runs' MoE TP x EP shows.
func (r GridRow) GPUs() int { return groupGPUs(r.TP, r.PP, r.DP) }

// groupGPUs is the GPUs of one tensor x pipeline x attention-DP group;
// an unset size counts as one.
func groupGPUs(tp, pp, dp int) int { return max(tp, 1) * max(pp, 1) * max(dp, 1) }

// tokensPerGPU is the output rate per GPU of a closed loop of concurrency
// users, each waiting TTFT then OSL-1 inter-token gaps per request.
func tokensPerGPU(concurrency, osl, gpus int, ttftMs, tpotMs float64) float64 {
	perRequest := ttftMs + float64(max(osl-1, 0))*tpotMs
	if perRequest <= 0 || gpus <= 0 {
		return 0
	}
	return float64(concurrency) * float64(osl) / (perRequest / 1e3) / float64(gpus)
}

// LoadGridRows reads the aggregated rows of silicon_calibration.csv.
func LoadGridRows(path string) ([]GridRow, error) {
	t, err := readCSV(path, "id", "system", "backend", "model_path", "mode", "isl", "osl", "batch_size", "tp_size", "silicon_ttft_ms", "silicon_tpot_ms")
	if err != nil {
		return nil, err
	}
	return gridRows(t)
}

func gridRows(t *csvTable) ([]GridRow, error) {
	var err error
	var out []GridRow
	reps := repeats(t)
	for i, row := range t.rows {
		if _, repeat := reps[i]; repeat || t.get(row, "mode") != "agg" {
			continue
		}
		prec := t.get(row, "precision")
		if prec == "" {
			prec = t.get(row, "gemm_quant_mode")
		}
		r := GridRow{ID: t.get(row, "id")}
		var isl int
		for _, f := range []struct {
			col string
			dst *int
		}{{"isl", &isl}, {"osl", &r.OSL}} {
			if *f.dst, err = t.int(row, f.col); err != nil {
				return nil, fmt.Errorf("%s line %d: %w", t.path, i+2, err)
			}
		}
		l, reason, err := readAggLayout(t, row)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", t.path, i+2, err)
		}
		if reason != "" {
			continue // LoadSilicon reports it as skipped
		}
		r.TP, r.PP, r.DP, r.Concurrency = l.TP, l.PP, l.DP, l.Concurrency
		if r.TTFTms, err = t.num(row, "silicon_ttft_ms"); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", t.path, i+2, err)
		}
		if r.TPOTms, err = t.num(row, "silicon_tpot_ms"); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", t.path, i+2, err)
		}
		if r.Concurrency < 1 || r.OSL < 1 || r.TTFTms <= 0 || r.TPOTms <= 0 {
			continue // not a measurement: LoadSilicon reports these as skipped
		}
		r.Grid = strings.Join([]string{t.get(row, "system"), t.get(row, "backend"), t.get(row, "model_path"), prec,
			fmt.Sprintf("%dx%d", isl, r.OSL)}, "/")
		out = append(out, r)
	}
	return out, nil
}

// Decision is one choice a user would make from predictions: the
// highest-throughput (parallelism, concurrency) of a grid whose predicted
// TPOT meets a limit, scored by what was measured.
type Decision struct {
	Grid        string  `json:"grid"`
	LimitTPOTms float64 `json:"tpot_limit_ms"`
	Quartile    int     `json:"quartile"`
	Choices     int     `json:"choices"`
	// Unanswered is how many of the choices the model gave no prediction for.
	Unanswered int    `json:"unanswered"`
	Pick       string `json:"pick,omitempty"`
	Best       string `json:"best"`
	// PickTPOTms and PickTokensPerGPU are the pick's measured figures.
	PickTPOTms       float64 `json:"pick_tpot_ms,omitempty"`
	PickTokensPerGPU float64 `json:"pick_tokens_per_gpu,omitempty"`
	BestTokensPerGPU float64 `json:"best_tokens_per_gpu"`
	// Miss: the pick's measured TPOT is over the limit, or nothing was
	// predicted to meet it though something measured did.
	Miss bool `json:"miss"`
	// Shortfall is 1 - pick/best measured throughput, for picks that meet the limit.
	Shortfall float64 `json:"shortfall"`
}

// Tally is how often a set of decisions went wrong.
type Tally struct {
	Decisions  int `json:"decisions"`
	Misses     int `json:"misses"`
	NothingFit int `json:"nothing_predicted_to_fit"`
	// MissRate is Misses over Decisions; MeanShortfall is over the
	// Decisions - Misses picks that meet their limit.
	MissRate      float64 `json:"miss_rate"`
	MeanShortfall float64 `json:"mean_shortfall"`
}

// TallyOf counts the misses and averages the shortfall of items.
func TallyOf(items []Decision) Tally {
	var t Tally
	short := 0.0
	for _, d := range items {
		t.Decisions++
		switch {
		case d.Miss && d.Pick == "":
			t.Misses++
			t.NothingFit++
		case d.Miss:
			t.Misses++
		default:
			short += d.Shortfall
		}
	}
	if t.Decisions > 0 {
		t.MissRate = float64(t.Misses) / float64(t.Decisions)
	}
	if met := t.Decisions - t.Misses; met > 0 {
		t.MeanShortfall = short / float64(met)
	}
	return t
}

// DecisionReport is every decision and how often they went wrong.
type DecisionReport struct {
	Grids int `json:"grids"`
	Tally
	// Unanswered is grid rows the model gave no prediction for (they can
	// be the best choice, never the pick).
	Unanswered int        `json:"unanswered_rows"`
	Items      []Decision `json:"items"`
}

// Decide makes, for each grid of at least two rows and each TPOT limit at
// the grid's measured quartiles, the pick a user would make from preds
// (by case ID) and scores it against the measurements.
func Decide(rows []GridRow, preds []Prediction) DecisionReport {
	byID := map[string]Prediction{}
	for _, p := range preds {
		if p.Err == "" && p.PredTPOTms > 0 && p.PredTTFTms > 0 {
			byID[p.ID] = p
		}
	}
	names, grids := groupBy(rows, func(r GridRow) string { return r.Grid })
	var rep DecisionReport
	for _, g := range names {
		rs := grids[g]
		if len(rs) < 2 {
			continue // one run is no choice
		}
		rep.Grids++
		tpots := make([]float64, len(rs))
		unanswered := 0
		for i, r := range rs {
			tpots[i] = r.TPOTms
			if _, ok := byID[r.ID]; !ok {
				unanswered++
			}
		}
		rep.Unanswered += unanswered
		sort.Float64s(tpots)
		for q := 1; q <= 3; q++ {
			limit := perf.Quantile(tpots, float64(q)/4)
			d := Decision{Grid: g, LimitTPOTms: limit, Quartile: q, Choices: len(rs), Unanswered: unanswered}
			bestPred := -1.0
			var pick *GridRow
			for i := range rs {
				r := &rs[i]
				meas := tokensPerGPU(r.Concurrency, r.OSL, r.GPUs(), r.TTFTms, r.TPOTms)
				if r.TPOTms <= limit && meas > d.BestTokensPerGPU {
					d.BestTokensPerGPU, d.Best = meas, r.ID
				}
				p, ok := byID[r.ID]
				if !ok || p.PredTPOTms > limit {
					continue
				}
				if v := tokensPerGPU(r.Concurrency, r.OSL, r.GPUs(), p.PredTTFTms, p.PredTPOTms); v > bestPred {
					bestPred, pick = v, r
				}
			}
			if d.Best == "" {
				continue // nothing measured meets it: no decision to score
			}
			switch {
			case pick == nil:
				d.Miss = true
			default:
				d.Pick, d.PickTPOTms = pick.ID, pick.TPOTms
				d.PickTokensPerGPU = tokensPerGPU(pick.Concurrency, pick.OSL, pick.GPUs(), pick.TTFTms, pick.TPOTms)
				if pick.TPOTms > limit {
					d.Miss = true
				} else {
					d.Shortfall = math.Max(0, 1-d.PickTokensPerGPU/d.BestTokensPerGPU)
				}
			}
			rep.Items = append(rep.Items, d)
		}
	}
	rep.Tally = TallyOf(rep.Items)
	return rep
}
