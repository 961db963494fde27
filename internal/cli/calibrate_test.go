package cli

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

func TestCalibrateHarnesses(t *testing.T) {
	dir := sharedtest.Path(t, "calibration")
	out, _, err := run(t, "calibrate", "harnesses", "--data", dir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Groups []struct {
			Group string             `json:"group"`
			N     int                `json:"n"`
			MAPE  map[string]float64 `json:"ttft_mape_pct"`
			Best  string             `json:"best"`
		} `json:"groups"`
		Overall map[string]float64 `json:"overall_ttft_mape_pct"`
		Best    float64            `json:"best_per_group_ttft_mape_pct"`
		N       int                `json:"n"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if rep.N < 400 || len(rep.Groups) < 5 || len(rep.Overall) != 3 {
		t.Fatalf("want every dense group under three harnesses, got %d rows, %d groups, %v", rep.N, len(rep.Groups), rep.Overall)
	}
	n := 0
	for _, g := range rep.Groups {
		n += g.N
		if g.MAPE[g.Best] <= 0 || len(g.MAPE) != 3 {
			t.Errorf("%s: best %q, errors %v", g.Group, g.Best, g.MAPE)
		}
	}
	if n != rep.N || rep.Best <= 0 || rep.Best > rep.Overall["burst"] {
		t.Fatalf("groups hold %d of %d rows; best per group %.1f%% vs burst %.1f%%", n, rep.N, rep.Best, rep.Overall["burst"])
	}
	table, _, err := run(t, "calibrate", "harnesses", "--data", dir)
	if err != nil || !strings.Contains(table, "best harness per group") || !strings.Contains(table, "TTFT MAPE queued") {
		t.Fatalf("table output: %v\n%s", err, table)
	}
}

func TestHarnessFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"calibrate", "--harness", "open", "--data", "."},
		{"estimate", "--harness", "open"},
	} {
		_, _, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "harness") || !strings.Contains(err.Error(), "steady, burst, queued") {
			t.Errorf("%v: want an error naming the harness and the choices, got %v", args, err)
		}
	}
	out, _, err := run(t, "estimate", "--harness", "queued", "-o", "json")
	if err != nil || !strings.Contains(out, `"harness": "queued"`) {
		t.Fatalf("estimate --harness queued: %v\n%s", err, out)
	}
}

func TestCalibrateCVAndKernelsFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate", "--cv", "backend"}, `--cv: "backend", want one of model, system, campaign`},
		{[]string{"calibrate", "--cv", "model", "--fit", "--out", "x.yaml"}, "--cv fits each fold itself"},
		{[]string{"calibrate", "--fit", "--out", "x.yaml", "--max-evals", "-1"}, "--max-evals: -1, want 1 to 1000000"},
		{[]string{"calibrate", "--cv", "model", "--ttft-weight", "NaN"}, "--ttft-weight: NaN"},
		{[]string{"calibrate", "--max-evals", "10"}, "give them with --fit or --cv"},
		{[]string{"calibrate", "--cv", "model", "--loss", "rmse"}, `--loss: "rmse", want one of mape, log`},
		{[]string{"calibrate", "--loss", "log"}, "give them with --fit or --cv"},
		{[]string{"estimate", "--kernels", t.TempDir()}, "no system folders"},
		{[]string{"estimate", "--kernels", "/does/not/exist"}, "--kernels /does/not/exist"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// --kernels changes the estimate where the tables cover the GPU and
// backend: directly, scaled to a MIG slice's share, or borrowed from the
// nearest measured GPU of the architecture, which a note names.
func TestEstimateWithKernels(t *testing.T) {
	dir := sharedtest.Path(t, "reference", "kernels")
	type result struct {
		TTFT         float64   `json:"ttft_ms"`
		TPOT         float64   `json:"tpot_ms"`
		TTFTInterval []float64 `json:"ttft_ms_interval"`
		Notes        []string  `json:"notes"`
	}
	get := func(args ...string) result {
		t.Helper()
		out, _, err := run(t, append([]string{"estimate", "--model", "Qwen/Qwen3-32B", "--precision", "fp8", "--backend", "trtllm", "--concurrency", "8", "-o", "json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.TPOT <= 0 {
			t.Fatalf("%v in %s", err, out)
		}
		return r
	}
	whole := get("--gpu", "h100_sxm", "--kernels", dir)
	plain := get("--gpu", "h100_sxm")
	if plain.TPOT == whole.TPOT {
		t.Errorf("h100 TPOT %v with and without kernels", plain.TPOT)
	}
	// Each pricing takes its interval from the spreads measured its way.
	iv := perf.MustDefaultParams().Intervals
	for _, c := range []struct {
		name string
		r    result
		kind *perf.IntervalKind
	}{{"roofline", plain, iv.Kinds["trtllm/dense-agg"]}, {"--kernels", whole, iv.KernelKinds["trtllm/dense-agg"]}} {
		if c.kind == nil || len(c.r.TTFTInterval) != 2 || math.Abs(c.r.TTFTInterval[0]/c.r.TTFT-c.kind.TTFT.P10) > 1e-6 {
			t.Errorf("%s: ttft %v, interval %v; want p10 %v of the spread measured that way", c.name, c.r.TTFT, c.r.TTFTInterval, c.kind)
		}
	}
	// Parameters whose spreads were measured on the roofline alone give a
	// --kernels estimate no interval, and configure refuses to use them.
	roofOnly := perf.MustDefaultParams()
	roofOnly.Intervals.KernelKinds = nil
	b, err := roofOnly.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "roof.yaml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := get("--gpu", "h100_sxm", "--kernels", dir, "--params", file); r.TTFTInterval != nil || !strings.Contains(strings.Join(r.Notes, "\n"), "no 80% interval") {
		t.Errorf("roofline spreads with --kernels: interval %v, notes %q", r.TTFTInterval, r.Notes)
	}
	if _, _, err := run(t, "--kernels", dir, "--params", file, "configure", "--confidence", "0.9"); err == nil || !strings.Contains(err.Error(), "measured without --kernels") {
		t.Errorf("configure --confidence with --kernels: %v", err)
	}
	if _, _, err := run(t, "--kernels", dir, "configure", "--confidence", "0.9"); err != nil {
		t.Errorf("configure --confidence with --kernels and the embedded spreads: %v", err)
	}
	slice := get("--gpu", "h100_sxm:3g.40gb", "--kernels", dir)
	if a := get("--gpu", "h100_sxm:3g.40gb"); a.TPOT == slice.TPOT || slice.TPOT <= whole.TPOT {
		t.Errorf("MIG slice TPOT %v without kernels, %v with (whole GPU %v): the whole GPU's tables must price it, scaled", a.TPOT, slice.TPOT, whole.TPOT)
	}
	nvl := get("--gpu", "h100_nvl", "--kernels", dir)
	if a := get("--gpu", "h100_nvl"); a.TPOT == nvl.TPOT || len(nvl.Notes) == 0 || !strings.Contains(nvl.Notes[0], "has no trtllm kernel tables: h100_sxm's measured ones") {
		t.Errorf("h100_nvl TPOT %v without kernels, %v with, notes %q", a.TPOT, nvl.TPOT, nvl.Notes)
	}
}

func TestCalibrateDecisions(t *testing.T) {
	dir := sharedtest.Path(t, "calibration")
	out, _, err := run(t, "calibrate", "decisions", "--data", dir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Grids     int `json:"grids"`
		Decisions int `json:"decisions"`
		Misses    int `json:"misses"`
		Items     []struct {
			Grid       string  `json:"grid"`
			Limit      float64 `json:"tpot_limit_ms"`
			Unanswered int     `json:"unanswered"`
			Miss       bool    `json:"miss"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if rep.Grids < 100 || rep.Decisions != len(rep.Items) || rep.Decisions < rep.Grids || rep.Misses == 0 || rep.Misses == rep.Decisions {
		t.Fatalf("%d grids, %d decisions (%d items), %d misses", rep.Grids, rep.Decisions, len(rep.Items), rep.Misses)
	}
	table, _, err := run(t, "calibrate", "decisions", "--data", dir)
	if err != nil || !strings.Contains(table, "grids answered in full") || !strings.Contains(table, "MEAN SHORTFALL") {
		t.Fatalf("table: %v\n%s", err, table)
	}
	// Picking at a confidence needs the parameters' intervals: the
	// embedded ones carry them, the uncalibrated prior does not.
	if _, _, err := run(t, "--params", "../../hack/calibration-prior.yaml", "calibrate", "decisions", "--data", dir, "--confidence", "0.9"); err == nil || !strings.Contains(err.Error(), "calibrate --cv --out") {
		t.Errorf("--confidence without intervals: %v", err)
	}
	if table, _, err := run(t, "calibrate", "decisions", "--data", dir, "--confidence", "0.9"); err != nil || !strings.Contains(table, "confidence 0.9") {
		t.Errorf("--confidence 0.9 on the embedded intervals: %v\n%s", err, table)
	}
	if _, _, err := run(t, "calibrate", "decisions", "--data", dir, "--confidence", "1.5"); err == nil || !strings.Contains(err.Error(), "0.5 to 0.99") {
		t.Errorf("--confidence 1.5: %v", err)
	}
}

// calibrate --cv on a small cut of the runs: three campaigns, TensorRT-LLM
// in two of them (so that intervals from one half of the groups can be
// scored on the other). It reports held-out intervals, their cross-fitted coverage and
// held-out decisions, and --out writes them into a parameter file that
// decisions --confidence then uses.
func TestCalibrateCVIntervals(t *testing.T) {
	taken := map[string]int{}
	dir := cutCalibration(t, func(r map[string]string) bool {
		key := r["backend"] + " " + r["model_path"]
		switch key {
		case "trtllm meta-llama/Llama-3.1-8B-Instruct", "sglang meta-llama/Llama-3.1-8B-Instruct", "vllm meta-llama/Llama-3.1-70B",
			"trtllm meta-llama/Llama-3.1-70B":
		default:
			return false
		}
		if r["mode"] != "agg" || taken[key] >= 24 {
			return false
		}
		taken[key]++
		return true
	})
	params := filepath.Join(dir, "params.yaml")
	out, _, err := run(t, "calibrate", "--data", dir, "--cv", "campaign", "--max-evals", "40", "--out", params, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Intervals struct {
			Kinds map[string]struct {
				N int `json:"n"`
			} `json:"kinds"`
		} `json:"intervals"`
		Coverage struct {
			N int `json:"n"`
		} `json:"interval_coverage"`
		Decisions struct {
			Grids int `json:"grids"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %.2000s", err, out)
	}
	if len(rep.Intervals.Kinds) != 3 || rep.Intervals.Kinds["vllm/dense-agg"].N != 24 || rep.Intervals.Kinds["trtllm/dense-agg"].N != 48 || rep.Coverage.N == 0 || rep.Decisions.Grids == 0 {
		t.Fatalf("intervals %+v, coverage %+v, decisions %+v", rep.Intervals, rep.Coverage, rep.Decisions)
	}
	p, err := perf.LoadParams(params)
	if err != nil || p.Intervals.For("trtllm/dense-agg") == nil {
		t.Fatalf("--out: %v", err)
	}
	if table, _, err := run(t, "--params", params, "calibrate", "decisions", "--data", dir, "--confidence", "0.9"); err != nil || !strings.Contains(table, "confidence 0.9") {
		t.Fatalf("decisions at a confidence: %v\n%s", err, table)
	}
	est, _, err := run(t, "--params", params, "estimate", "--model", "meta-llama/Llama-3.1-70B", "--backend", "vllm", "--tp", "4", "-o", "json")
	if err != nil || !strings.Contains(est, `"ttft_ms_interval"`) || !strings.Contains(est, `"tpot_ms_interval"`) {
		t.Fatalf("estimate with intervals: %v\n%s", err, est)
	}
}

// cutCalibration writes the shared measured runs that keep admits to a
// temporary calibration folder, in the file's order.
func cutCalibration(t *testing.T, keep func(row map[string]string) bool) string {
	t.Helper()
	src, err := os.Open(filepath.Join(sharedtest.Path(t, "calibration"), "silicon_calibration.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rows, err := csv.NewReader(src).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	cut := [][]string{rows[0]}
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			m[h] = r[i]
		}
		if keep(m) {
			cut = append(cut, r)
		}
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "silicon_calibration.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := csv.NewWriter(f)
	if err := w.WriteAll(cut); err != nil {
		t.Fatal(err)
	}
	return dir
}

// calibrate moe on short MoE runs of two backends and four models: a
// fold per model and backend, terms per backend, and --out writes
// parameters that carry the terms and keep the dense intervals.
func TestCalibrateMoE(t *testing.T) {
	taken := map[string]int{}
	dir := cutCalibration(t, func(r map[string]string) bool {
		key := r["backend"] + " " + r["model_path"]
		switch key {
		case "sglang deepseek-ai/DeepSeek-R1", "sglang Qwen/Qwen3.5-397B-A17B", "vllm openai/gpt-oss-120b", "vllm MiniMaxAI/MiniMax-M2.5":
		default:
			return false
		}
		if r["mode"] != "agg" || r["batch_size"] != "4" && r["batch_size"] != "8" || taken[key] >= 8 {
			return false
		}
		taken[key]++
		return true
	})
	params := filepath.Join(dir, "params.yaml")
	out, _, err := run(t, "calibrate", "moe", "--data", dir, "--out", params, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		By     string `json:"by"`
		Chosen map[string]struct {
			FloorUs float64 `json:"prompt_floor_us"`
			LayerUs float64 `json:"layer_us"`
		} `json:"chosen"`
		Folds []struct {
			Held    string `json:"held"`
			Backend string `json:"backend"`
		} `json:"folds"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %.2000s", err, out)
	}
	if _, ok := rep.Chosen["sglang"]; rep.By != "model" || len(rep.Chosen) != 2 || !ok || len(rep.Folds) != len(taken) {
		t.Fatalf("by %q, chosen %v, %d folds for %v", rep.By, rep.Chosen, len(rep.Folds), taken)
	}
	p, err := perf.LoadParams(params)
	if err != nil {
		t.Fatalf("--out: %v", err)
	}
	sg := p.Backends[perf.SGLang]
	if sg.MoEPromptFloorUs != rep.Chosen["sglang"].FloorUs || sg.MoELayerUs != rep.Chosen["sglang"].LayerUs || p.Intervals.For("trtllm/dense-agg") == nil {
		t.Errorf("written %g/%g us, chosen %+v; dense intervals kept: %v", sg.MoEPromptFloorUs, sg.MoELayerUs, rep.Chosen["sglang"], p.Intervals.For("trtllm/dense-agg") != nil)
	}
	table, _, err := run(t, "calibrate", "moe", "--data", dir, "--cv", "system")
	if err != nil || !strings.Contains(table, "held out by system: all MoE runs") || !strings.Contains(table, "no terms") {
		t.Fatalf("table: %v\n%s", err, table)
	}
	if _, _, err := run(t, "calibrate", "moe", "--data", dir, "--cv", "backend"); err == nil || !strings.Contains(err.Error(), "--cv") {
		t.Errorf("--cv backend: %v", err)
	}
}

// --kernels keeps its parsed tables in --kernels-cache: a second run reads
// them back and answers the same; "" turns the cache off.
func TestKernelsCacheFlag(t *testing.T) {
	dir := sharedtest.Path(t, "reference", "kernels")
	cache := t.TempDir()
	args := []string{"--kernels", dir, "--kernels-cache", cache, "estimate", "--model", "Qwen/Qwen3-32B", "--precision", "fp8", "--backend", "trtllm", "--concurrency", "8", "-o", "json"}
	first, _, err := run(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "*.set.gob")); len(files) != 1 {
		t.Fatalf("cache files after one run: %v", files)
	}
	second, _, err := run(t, args...)
	if err != nil || second != first {
		t.Fatalf("second run (from the cache) answered differently: %v", err)
	}
	args[3] = ""
	off, _, err := run(t, args...)
	if err != nil || off != first {
		t.Fatalf("without the cache: %v, same answer %v", err, off == first)
	}
}

// A measurement listed twice is predicted once, and calibrate says which
// rows it left out and why, on stderr and in the JSON.
func TestCalibrateReportsRepeatedRows(t *testing.T) {
	dir := calibrationCSV(t,
		"a,source_file=x.csv,vllm,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1024,128,8,1,1,123.4567891,12.3456789",
		"b,source_file=y.csv,vllm,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1024,128,8,1,1,123.4567891,12.3456789",
		"c,source_file=y.csv,vllm,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1024,128,16,1,1,150.4567891,14.3456789")
	out, stderr, err := run(t, "calibrate", "--data", dir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Cases     int `json:"cases"`
		Skipped   int `json:"skipped"`
		SkippedBy []struct {
			Reason string `json:"reason"`
			Rows   int    `json:"rows"`
		} `json:"skipped_by_reason"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if rep.Cases != 2 || rep.Skipped != 1 || len(rep.SkippedBy) != 1 || rep.SkippedBy[0].Rows != 1 ||
		!strings.Contains(rep.SkippedBy[0].Reason, "repeats a measurement") {
		t.Errorf("want 2 cases and the repeat skipped with its reason, got %+v", rep)
	}
	if !strings.Contains(stderr, "rows left out: 1 (1 repeats a measurement listed earlier)") {
		t.Errorf("stderr does not say what was left out: %q", stderr)
	}
}

// calibrate says which side its errors fall on: of two runs, one measured
// far slower than any prediction and one far faster, half are predicted
// faster than measured, in the JSON and in the table.
func TestCalibrateReportsOptimisticShares(t *testing.T) {
	dir := calibrationCSV(t,
		"slow,source_file=x.csv,vllm,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1024,128,8,1,1,900000,9000",
		"fast,source_file=x.csv,vllm,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1024,128,16,1,1,0.01,0.001")
	out, _, err := run(t, "calibrate", "--data", dir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Dense struct {
			TTFT *float64 `json:"ttft_optimistic_pct"`
			TPOT *float64 `json:"tpot_optimistic_pct"`
			TPS  *float64 `json:"throughput_optimistic_pct"`
		} `json:"dense_agg"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if rep.Dense.TTFT == nil || *rep.Dense.TTFT != 50 || rep.Dense.TPOT == nil || *rep.Dense.TPOT != 50 || rep.Dense.TPS != nil {
		t.Errorf("want half of TTFTs and TPOTs predicted faster and no throughput share, got %s", out)
	}
	table, _, err := run(t, "calibrate", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "PREDICTED FASTER (TTFT / TPOT / THROUGHPUT)") || !strings.Contains(table, "50% / 50% / -") {
		t.Errorf("table lacks the optimistic shares:\n%s", table)
	}
}

// calibrate handoff on light-load disaggregated runs of two backends: the
// costs per backend, the folds of both groupings, --out writes the kept
// costs, and a bad grouping is an error.
func TestCalibrateHandoff(t *testing.T) {
	dir, params, rep := runTermSearch(t, "handoff", func(r map[string]string) bool {
		return r["mode"] == "disagg" && r["backend"] != "vllm"
	})
	if len(rep.Picked) != 2 || len(rep.Chosen) != 2 || len(rep.HeldOut) != 2 || rep.HeldOut[0].By != "campaign" || rep.HeldOut[1].By != "model" || len(rep.HeldOut[0].Folds) == 0 {
		t.Fatalf("picked %v, chosen %v, held out %+v", rep.Picked, rep.Chosen, rep.HeldOut)
	}
	p, err := perf.LoadParams(params)
	if err != nil {
		t.Fatalf("--out: %v", err)
	}
	for b, ms := range rep.Chosen {
		if got := p.Backends[perf.Backend(b)].HandoffMs; got != ms {
			t.Errorf("written %s %g ms, chosen %g", b, got, ms)
		}
	}
	table, _, err := run(t, "calibrate", "handoff", "--data", dir, "--cv", "system")
	if err != nil || !strings.Contains(table, "held out by system") || !strings.Contains(table, "no hand-off cost") {
		t.Fatalf("table: %v\n%s", err, table)
	}
	if _, _, err := run(t, "calibrate", "handoff", "--data", dir, "--cv", "backend"); err == nil || !strings.Contains(err.Error(), "--cv") {
		t.Errorf("--cv backend: %v", err)
	}
	if _, _, err := run(t, "calibrate", "handoff", "--data", dir, "--cv", ""); err == nil || !strings.Contains(err.Error(), "--cv: empty") {
		t.Errorf("--cv empty: %v", err)
	}
}

// calibrate adp on attention-DP runs of two backends: a hold per backend,
// the folds of both groupings, --out writes the kept holds, and a set
// without attention-DP runs is an error that says so.
func TestCalibrateADP(t *testing.T) {
	checkTermSearch(t, "adp", func(r map[string]string) bool {
		return r["mode"] == "agg" && r["attention_dp_size"] != "" && r["attention_dp_size"] != "1"
	}, func(bp *perf.BackendParams) float64 { return float64(bp.ADPBalanceIters) })
	none := cutCalibration(t, func(r map[string]string) bool { return r["mode"] == "disagg" && r["backend"] == "sglang" })
	if _, _, err := run(t, "calibrate", "adp", "--data", none); err == nil || !strings.Contains(err.Error(), "no measured aggregated runs with attention data parallelism") {
		t.Errorf("no attention-DP runs: %v", err)
	}
}

// calibrate pools on disaggregated runs without worker counts: a knee per
// backend, --out writes the kept knees, the table names the built-in knee,
// and a set without such runs is an error that says so.
func TestCalibratePools(t *testing.T) {
	dir := checkTermSearch(t, "pools", func(r map[string]string) bool {
		return r["mode"] == "disagg" && r["prefill_num_workers"] == "" && r["decode_num_workers"] == "" && r["backend"] != "vllm"
	}, func(bp *perf.BackendParams) float64 { return bp.PoolKnee })
	table, _, err := run(t, "calibrate", "pools", "--data", dir, "--cv", "model")
	if err != nil || !strings.Contains(table, "built-in (3.5 x)") || !strings.Contains(table, "held out by model") {
		t.Fatalf("table: %v\n%s", err, table)
	}
	none := cutCalibration(t, func(r map[string]string) bool { return r["mode"] == "agg" && r["backend"] == "vllm" })
	if _, _, err := run(t, "calibrate", "pools", "--data", none); err == nil || !strings.Contains(err.Error(), "without worker counts") {
		t.Errorf("no runs without worker counts: %v", err)
	}
}

// calibrate ttft-floor on MoE runs of two backends and calibrate frontend
// on runs of two backends: a value per backend, --out writes the kept ones.
func TestCalibrateTTFTFloorAndFrontend(t *testing.T) {
	checkTermSearch(t, "ttft-floor", func(r map[string]string) bool {
		return r["mode"] == "agg" && strings.Contains(r["model_path"], "DeepSeek") && r["backend"] != "vllm"
	}, func(bp *perf.BackendParams) float64 { return bp.MoETTFTFloorExpertUs })
	checkTermSearch(t, "frontend", func(r map[string]string) bool {
		return r["mode"] == "agg" && r["backend"] != "sglang"
	}, func(bp *perf.BackendParams) float64 { return bp.FrontendParallel })
}

// calibrate moe-layer --arch hopper on Hopper MoE runs of two backends: a
// cost per backend, --out writes the kept ones under the architecture;
// an unknown or missing --arch is refused before the data is read.
func TestCalibrateMoELayer(t *testing.T) {
	hopper := map[string]bool{"h100_sxm": true, "h200_sxm": true}
	checkTermSearch(t, "moe-layer", func(r map[string]string) bool {
		return r["mode"] == "agg" && hopper[r["system"]] && (strings.Contains(r["model_path"], "DeepSeek") || strings.Contains(r["model_path"], "Qwen3-235B")) && r["backend"] != "vllm"
	}, func(bp *perf.BackendParams) float64 { return bp.MoELayerUsByArch["hopper"] }, "--arch", "hopper")
	for _, args := range [][]string{{"--arch", "volta"}, {}} {
		_, stderr, err := run(t, append([]string{"calibrate", "moe-layer", "--data", t.TempDir()}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "is not a GPU architecture; use one of ampere, ada, hopper, blackwell") || strings.Contains(stderr, "rows left out") {
			t.Errorf("moe-layer %v: %v (stderr %q)", args, err, stderr)
		}
	}
}

// checkTermSearch runs a term search (runTermSearch) and checks its
// report: a pick for each of two backends, folds held out by campaign
// then model, and --out writing the chosen values (value reads one) under
// a source that names the search. It returns the data folder.
func checkTermSearch(t *testing.T, cmd string, keep func(map[string]string) bool, value func(*perf.BackendParams) float64, flags ...string) string {
	t.Helper()
	dir, params, rep := runTermSearch(t, cmd, keep, flags...)
	if len(rep.Picked) != 2 || len(rep.HeldOut) != 2 || rep.HeldOut[0].By != "campaign" || rep.HeldOut[1].By != "model" || len(rep.HeldOut[0].Folds) == 0 {
		t.Fatalf("%s: picked %v, chosen %v, held out %+v", cmd, rep.Picked, rep.Chosen, rep.HeldOut)
	}
	p, err := perf.LoadParams(params)
	if err != nil {
		t.Fatalf("%s --out: %v", cmd, err)
	}
	for b, v := range rep.Chosen {
		if got := value(p.Backends[perf.Backend(b)]); got != v {
			t.Errorf("%s: written %s %g, chosen %g", cmd, b, got, v)
		}
	}
	if !strings.Contains(p.Source, "calibrate "+cmd) {
		t.Errorf("%s: source %q does not name the search", cmd, p.Source)
	}
	return dir
}

// termReport is what calibrate handoff, adp, pools, ttft-floor, moe-layer and frontend print with -o json.
type termReport struct {
	Picked  map[string]float64 `json:"picked"`
	Chosen  map[string]float64 `json:"chosen"`
	HeldOut []struct {
		By    string `json:"by"`
		Folds []struct {
			Held  string  `json:"held"`
			Value float64 `json:"value"`
		} `json:"folds"`
	} `json:"held_out"`
}

// runTermSearch runs a term search on at most three rows of each backend
// and campaign that keep admits, writing the parameters; it returns the
// data folder, the parameter file and the report.
func runTermSearch(t *testing.T, cmd string, keep func(map[string]string) bool, flags ...string) (string, string, termReport) {
	t.Helper()
	taken := map[string]int{}
	dir := cutCalibration(t, func(r map[string]string) bool {
		key := r["backend"] + " " + strings.SplitN(r["silicon_data_source"], ";", 2)[0]
		if !keep(r) || taken[key] >= 3 {
			return false
		}
		taken[key]++
		return true
	})
	params := filepath.Join(dir, "params.yaml")
	out, _, err := run(t, append([]string{"calibrate", cmd, "--data", dir, "--out", params, "-o", "json"}, flags...)...)
	if err != nil {
		t.Fatal(err)
	}
	var rep termReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %.2000s", err, out)
	}
	return dir, params, rep
}

// calibrate spec prints the runs priced with and without drafting, the
// held-out rows and each fold's pick; a bad grid is refused by name.
func TestCalibrateSpec(t *testing.T) {
	dir := sharedtest.Path(t, "calibration")
	out, stderr, err := run(t, "calibrate", "spec", "--data", dir, "--backend", "trtllm", "--model", "deepseek-ai/DeepSeek-R1",
		"--mode", "disagg", "--max-concurrency", "256", "--cv", "system")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"without drafting", "held out by system", "fold system b200_sxm (trtllm)", "3 drafted, "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "[7/7] acceptance 4 over ") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	if _, _, err := run(t, "calibrate", "spec", "--data", dir, "--grid", "2,3"); err == nil || !strings.Contains(err.Error(), "must start at 0") {
		t.Errorf("grid without 0: %v", err)
	}
}

// calibrate --cv --out writes its spreads where they belong and keeps the
// other pricing's spreads of the starting parameters.
func TestHeldOutIntervalsKeepTheOtherPricing(t *testing.T) {
	r := perf.Ratio{P10: 0.8, P50: 1, P90: 1.2}
	kind := func(n int) map[string]*perf.IntervalKind {
		return map[string]*perf.IntervalKind{"vllm/dense-agg": {N: n, TTFT: r, TPOT: r}}
	}
	start := perf.MustDefaultParams()
	start.Intervals = &perf.Intervals{Kinds: kind(1), KernelKinds: kind(2)}
	got := withHeldOutIntervals(start, &perf.Intervals{Kinds: kind(3)})
	if got.Intervals.Kinds["vllm/dense-agg"].N != 3 || got.Intervals.KernelKinds["vllm/dense-agg"].N != 2 {
		t.Errorf("roofline run: %+v", got.Intervals)
	}
	start.Kernels = func(*catalog.GPU, perf.Backend) (perf.Kernels, *catalog.GPU, error) { return nil, nil, nil }
	got = withHeldOutIntervals(start, &perf.Intervals{KernelKinds: kind(4)})
	if got.Intervals.Kinds["vllm/dense-agg"].N != 1 || got.Intervals.KernelKinds["vllm/dense-agg"].N != 4 {
		t.Errorf("run with --kernels: %+v", got.Intervals)
	}
	if start.Intervals.Kinds["vllm/dense-agg"].N != 1 || start.Intervals.KernelKinds["vllm/dense-agg"].N != 2 {
		t.Errorf("the starting parameters changed: %+v", start.Intervals)
	}
}

// calibrationCSV is a calibration folder whose silicon_calibration.csv
// holds rows (id, source, backend, model, system, precision, mode, isl,
// osl, batch size, tp, pp, TTFT ms, TPOT ms).
func calibrationCSV(t *testing.T, rows ...string) string {
	t.Helper()
	dir := t.TempDir()
	data := "id,silicon_data_source,backend,model_path,system,precision,mode,isl,osl,batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n" +
		strings.Join(rows, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "silicon_calibration.csv"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
