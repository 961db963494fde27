package cli

import (
	"encoding/json"
	"strings"
	"testing"

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
// backend, and leaves one they do not cover (a MIG slice) as it was.
func TestEstimateWithKernels(t *testing.T) {
	dir := sharedtest.Path(t, "reference", "kernels")
	get := func(args ...string) float64 {
		t.Helper()
		out, _, err := run(t, append([]string{"estimate", "--model", "Qwen/Qwen3-32B", "--backend", "trtllm", "--concurrency", "8", "-o", "json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			TPOT float64 `json:"tpot_ms"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.TPOT <= 0 {
			t.Fatalf("%v in %s", err, out)
		}
		return r.TPOT
	}
	if a, b := get("--gpu", "h100_sxm"), get("--gpu", "h100_sxm", "--kernels", dir); a == b {
		t.Errorf("h100 TPOT %v with and without kernels", a)
	}
	if a, b := get("--gpu", "h100_sxm:3g.40gb"), get("--gpu", "h100_sxm:3g.40gb", "--kernels", dir); a != b {
		t.Errorf("MIG slice TPOT %v without kernels, %v with: fractions must stay on the roofline", a, b)
	}
}
