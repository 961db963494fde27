package calibrate

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

// ttftBound is the dense aggregated TTFT MAPE (percent) the embedded
// parameters are held to, a regression guard just above today's 36.9%. The
// project target is 30%; TestNoSingleHarnessFitsTheDenseRows pins why one
// harness for every row cannot reach it on this data.
const ttftBound = 38.0

func loadShared(t *testing.T) (*Dataset, estimate.Env) {
	t.Helper()
	cat := catalog.MustDefault()
	ds, err := LoadDir(sharedtest.Path(t, "calibration"), cat)
	if err != nil {
		t.Fatal(err)
	}
	return ds, estimate.Env{Catalog: cat, Params: perf.MustDefaultParams()}
}

// TestCalibrationAccuracy holds the embedded parameters to the accuracy the
// project promises on aggregated dense-model runs.
func TestCalibrationAccuracy(t *testing.T) {
	ds, env := loadShared(t)
	rep := Summarise(Predict(env, ds.Cases), len(ds.Skipped))
	for _, s := range []Stats{rep.Overall, rep.DenseAgg, rep.MoEAgg, rep.Disagg} {
		t.Logf("%s", s)
	}
	t.Logf("max-throughput: n=%d throughput MAPE %.1f%%", rep.MaxTput.N, rep.MaxTput.TPSMAPE)
	for _, g := range rep.Groups {
		t.Logf("  %s", g)
	}
	d := rep.DenseAgg
	if d.N < 400 || d.Failed > 0 {
		t.Fatalf("dense agg rows: %d evaluated, %d failed", d.N, d.Failed)
	}
	if d.TPOTMAPE > 20 {
		t.Errorf("dense agg TPOT MAPE %.1f%% exceeds 20%%", d.TPOTMAPE)
	}
	// The project's target is 30%; see docs/PERFORMANCE-MODEL.md ("Known
	// limits") for what stands in the way.
	if d.TTFTMAPE > ttftBound {
		t.Errorf("dense agg TTFT MAPE %.1f%% exceeds %.0f%%", d.TTFTMAPE, ttftBound)
	}
	if rep.MaxTput.TPSMAPE > 20 {
		t.Errorf("max-throughput MAPE %.1f%% exceeds 20%%", rep.MaxTput.TPSMAPE)
	}
}

func TestSkippedRowsHaveReasons(t *testing.T) {
	ds, _ := loadShared(t)
	if len(ds.Skipped) == 0 {
		t.Fatal("the shared data has models outside the catalog; they must be reported as skipped")
	}
	for _, s := range ds.Skipped {
		if s.Reason == "" || s.Line < 2 {
			t.Fatalf("skipped row without a reason or line: %+v", s)
		}
	}
}

func TestMalformedRowsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "silicon_calibration.csv")
	os.WriteFile(path, []byte("id,backend,model_path,system,mode,isl,osl,batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n"+
		"a,vllm,Qwen/Qwen3-32B,h100_sxm,agg,1000,100,8,1,1,100,10\n"+
		"b,vllm,Qwen/Qwen3-32B,h100_sxm,agg,lots,100,8,1,1,100,10\n"), 0o644)
	_, err := LoadDir(dir, catalog.MustDefault())
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "isl") {
		t.Fatalf("want an error naming line 3 and column isl, got %v", err)
	}
	os.WriteFile(path, []byte("id,backend\n"), 0o644)
	if _, err := LoadDir(dir, catalog.MustDefault()); err == nil || !strings.Contains(err.Error(), "missing column") {
		t.Fatalf("missing columns: %v", err)
	}
}

// A disaggregated row without worker counts is predicted as a user's query
// without them is: with pools sized to its concurrency.
func TestDisaggRowWithoutWorkersIsSized(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "silicon_calibration.csv"), []byte(
		"id,silicon_data_source,backend,model_path,system,mode,isl,osl,prefill_num_workers,prefill_tp_size,decode_num_workers,decode_tp_size,silicon_ttft_ms,silicon_tpot_ms\n"+
			"a,silicon_concurrency=300,vllm,Qwen/Qwen3-32B,h100_sxm,disagg,1000,100,,1,,1,100,10\n"+
			"b,silicon_concurrency=8,vllm,Qwen/Qwen3-32B,h100_sxm,disagg,1000,100,1,1,2,1,100,10\n"), 0o644)
	ds, err := LoadDir(dir, catalog.MustDefault())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Cases) != 2 || len(ds.Skipped) != 0 {
		t.Fatalf("cases %+v, skipped %+v", ds.Cases, ds.Skipped)
	}
	a, b := ds.Cases[0].Query, ds.Cases[1].Query
	if a.PrefillWorkers != 0 || a.DecodeWorkers != 0 || b.PrefillWorkers != 1 || b.DecodeWorkers != 2 {
		t.Fatalf("worker counts %d/%d and %d/%d, want 0/0 (to size) and 1/2", a.PrefillWorkers, a.DecodeWorkers, b.PrefillWorkers, b.DecodeWorkers)
	}
	preds := Predict(estimate.Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()}, ds.Cases)
	if preds[0].Err != "" || !(preds[0].PredTTFTms > 0) || preds[1].Err != "" {
		t.Fatalf("predictions %+v", preds)
	}
}

// A row may declare the client that measured it; that harness then
// predicts it, and a harness the model does not know is an error naming the
// line and the column.
func TestDeclaredHarnessColumn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "silicon_calibration.csv")
	head := "id,backend,model_path,system,mode,isl,osl,batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms,harness\n"
	row := "vllm,Qwen/Qwen3-8B,h100_sxm,agg,2000,300,16,1,1,200,20,"
	os.WriteFile(path, []byte(head+"a,"+row+"\nb,"+row+"queued\nc,"+row+"steady\n"), 0o644)
	ds, err := LoadDir(dir, catalog.MustDefault())
	if err != nil {
		t.Fatal(err)
	}
	_, env := loadShared(t)
	preds := Predict(env, ds.Cases)
	if len(preds) != 3 || preds[0].Harness != "" || preds[1].Harness != "queued" {
		t.Fatalf("cases: %+v", preds)
	}
	undeclared, queued, steady := preds[0].PredTTFTms, preds[1].PredTTFTms, preds[2].PredTTFTms
	if !(steady < undeclared && undeclared < queued) {
		t.Fatalf("declared harnesses must be used: steady %.1f, default (burst) %.1f, queued %.1f ms", steady, undeclared, queued)
	}
	os.WriteFile(path, []byte(head+"a,"+row+"open\n"), 0o644)
	if _, err := LoadDir(dir, catalog.MustDefault()); err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "column harness") {
		t.Fatalf("want an error naming line 2 and column harness, got %v", err)
	}
}

// TestFitRecoversPerturbedParameters checks the fitter, not the data: start
// from parameters knocked off their fitted values and the loss must drop
// back most of the way.
func TestFitRecoversPerturbedParameters(t *testing.T) {
	if testing.Short() {
		t.Skip("fits for a few seconds")
	}
	ds, env := loadShared(t)
	var cases []Case
	for _, c := range ds.FitSet() {
		if c.Source == "silicon" && strings.HasPrefix(c.System, "h200") && len(cases) < 60 {
			cases = append(cases, c)
		}
	}
	good := Loss(Predict(env, cases))
	bad := env.Params.Clone()
	bad.Families[catalog.Hopper].GEMM[catalog.FP8] *= 0.5
	bad.Families[catalog.Hopper].GEMMBandwidth *= 0.7
	bad.Backends[perf.VLLM].StepOverheadMs *= 4
	env.Params = bad
	start := Loss(Predict(env, cases))
	if start < good*1.3 {
		t.Fatalf("perturbation did not hurt: %.3f vs %.3f", start, good)
	}
	res, err := Fit(env, bad, cases, FitOptions{MaxEvaluations: 400})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loss: reference %.3f, perturbed %.3f, fitted %.3f in %d evaluations", good, start, res.Loss, res.Evaluations)
	if res.Loss > good+0.3*(start-good) {
		t.Fatalf("fit recovered too little: fitted %.3f, perturbed %.3f, reference %.3f", res.Loss, start, good)
	}
}

// A small evaluation budget still fits (fewer restarts), and one too
// small to build the simplex is an error, not a silent no-op.
func TestFitBudgets(t *testing.T) {
	ds, env := loadShared(t)
	cases := firstServingRuns(ds, 10)
	if _, err := Fit(env, env.Params, cases, FitOptions{MaxEvaluations: 3}); err == nil || !strings.Contains(err.Error(), "--max-evals") {
		t.Errorf("3 evaluations: %v", err)
	}
	res, err := Fit(env, env.Params, cases, FitOptions{MaxEvaluations: 80})
	if err != nil {
		t.Fatal(err)
	}
	if res.Evaluations < len(Knobs())+2 || res.Evaluations > 80 {
		t.Errorf("80-evaluation budget ran %d evaluations", res.Evaluations)
	}
}

// TestNoSingleHarnessFitsTheDenseRows pins the evidence behind the dense
// TTFT target (docs/PERFORMANCE-MODEL.md): the measured runs were taken by
// clients that stamp requests differently. The Llama-3.1-8B TensorRT-LLM
// runs on H100 are reproduced far better by a client that stamps requests
// when it queues them, while the Llama-3.1-70B runs are far worse under it
// (their 1024/8192 rows would gain seconds of TTFT that were not measured).
func TestNoSingleHarnessFitsTheDenseRows(t *testing.T) {
	ds, env := loadShared(t)
	rep := CompareHarnesses(env, ds.Cases)
	byGroup := map[string]HarnessGroup{}
	for _, g := range rep.Groups {
		byGroup[g.Group] = g
		t.Logf("%-55s n=%-3d steady %5.1f%%  burst %5.1f%%  queued %5.1f%%", g.Group, g.N,
			g.TTFTMAPE["steady"], g.TTFTMAPE["burst"], g.TTFTMAPE["queued"])
	}
	t.Logf("overall: steady %.1f%%, burst %.1f%%, queued %.1f%%; best harness per group %.1f%%",
		rep.Overall["steady"], rep.Overall["burst"], rep.Overall["queued"], rep.BestPerGroup)
	h100 := byGroup["h100_sxm/trtllm/meta-llama/Llama-3.1-8B-Instruct/agg"]
	if h100.N < 100 || h100.TTFTMAPE["queued"] > h100.TTFTMAPE["burst"]-10 {
		t.Errorf("H100 TensorRT-LLM 8B: queued %.1f%% should beat burst %.1f%% by 10 points", h100.TTFTMAPE["queued"], h100.TTFTMAPE["burst"])
	}
	for _, name := range []string{"b200_sxm/trtllm/meta-llama/Llama-3.1-70B/agg", "h200_sxm/vllm/meta-llama/Llama-3.1-70B/agg"} {
		g := byGroup[name]
		if g.N < 30 || g.TTFTMAPE["queued"] < 2*g.TTFTMAPE["burst"] {
			t.Errorf("%s: queued %.1f%% should be at least twice burst %.1f%%", name, g.TTFTMAPE["queued"], g.TTFTMAPE["burst"])
		}
	}
	if d := rep.Overall[string(DefaultHarness)]; rep.BestPerGroup >= d {
		t.Errorf("choosing a harness per group (%.1f%%) should beat the single default (%.1f%%)", rep.BestPerGroup, d)
	}
}

// A fit of some knob groups leaves the others as the starting parameters
// give them: GEMM efficiencies fitted to kernel tables stay so when only
// the serving terms are fitted on end-to-end runs.
func TestFitOnlyTheGroupsAsked(t *testing.T) {
	ds, env := loadShared(t)
	cases := firstServingRuns(ds, 12)
	start := env.Params.Clone()
	start.Backends[perf.VLLM].StepOverheadMs *= 3
	start.Backends[perf.TRTLLM].StepOverheadMs *= 3
	res, err := Fit(env, start, cases, FitOptions{MaxEvaluations: 60, Knobs: "serving"})
	if err != nil {
		t.Fatal(err)
	}
	for fam, f := range start.Families {
		g := res.Params.Families[fam]
		if !reflect.DeepEqual(f.GEMM, g.GEMM) || f.GEMMBandwidth != g.GEMMBandwidth || f.AttentionCompute != g.AttentionCompute || f.AttentionBandwidth != g.AttentionBandwidth {
			t.Errorf("%s: a serving-only fit moved the kernel efficiencies: %+v -> %+v", fam, f, g)
		}
	}
	moved := false
	for _, b := range perf.Backends {
		if res.Params.Backends[b].StepOverheadMs != start.Backends[b].StepOverheadMs {
			moved = true
		}
	}
	if !moved || !(res.Loss < res.InitialLoss) {
		t.Errorf("the serving terms did not move (loss %.3f from %.3f)", res.Loss, res.InitialLoss)
	}
	for _, c := range []struct {
		knobs string
		n     int
	}{{"", len(Knobs())}, {"gemm,attention,serving", len(Knobs())}, {"serving", len(servingKnobs())}, {"attention, serving,serving", len(attentionKnobs()) + len(servingKnobs())}} {
		ks, err := ParseKnobs(c.knobs)
		if err != nil || len(ks) != c.n {
			t.Errorf("ParseKnobs(%q): %d knobs, %v; want %d", c.knobs, len(ks), err, c.n)
		}
	}
	if _, err := ParseKnobs("serving,gemms"); err == nil || !strings.Contains(err.Error(), `"gemms"`) || !strings.Contains(err.Error(), "gemm, attention, serving") {
		t.Errorf("unknown group: %v", err)
	}
	if _, err := Fit(env, start, cases, FitOptions{MaxEvaluations: 60, Knobs: "bogus"}); err == nil {
		t.Error("a fit with an unknown knob group ran")
	}
}

// firstServingRuns is the first n serving runs of the fit set.
func firstServingRuns(ds *Dataset, n int) []Case {
	var cases []Case
	for _, c := range ds.FitSet() {
		if c.Source == "silicon" && len(cases) < n {
			cases = append(cases, c)
		}
	}
	return cases
}
