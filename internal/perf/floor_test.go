package perf

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// termsWorker is model on 8 GPUs of gpu under backend b, with the MoE
// serving terms set to floorUs and layerUs (the others at their defaults).
func termsWorker(t *testing.T, model, gpu string, b Backend, floorUs, layerUs float64) *Worker {
	t.Helper()
	p := MustDefaultParams().Clone()
	p.Backends[b].MoEPromptFloorUs, p.Backends[b].MoELayerUs = floorUs, layerUs
	return catalogWorker(t, model, gpu, "", Config{Backend: b, Weights: catalog.FP8, TP: 8}, p)
}

// The MoE prompt floor bounds an iteration with prompt tokens from below:
// a short prompt takes the floor (per MoE layer) plus the overheads, a long
// one whose GPU work exceeds it is unchanged, and neither decode-only
// iterations nor dense models feel it.
func TestMoEPromptFloor(t *testing.T) {
	const floorUs = 3000
	build := func(model string, floor float64) *Worker { return termsWorker(t, model, "b200_sxm", SGLang, floor, 0) }
	none, floored := build("deepseek-ai/DeepSeek-R1", 0), build("deepseek-ai/DeepSeek-R1", floorUs)
	moeLayers := float64(none.Config().Model.MoELayers())
	be := floored.be
	overheads := (be.StepOverheadMs+be.PrefillOverheadMs)*1e-3 + be.PerSeqOverheadUs*1e-6

	short := prefillStep(floored, 64)
	if want := moeLayers*floorUs*1e-6 + overheads; prefillStep(none, 64) >= want || !near(short, want, 1e-9) {
		t.Errorf("64-token prompt: %.2f ms with the floor, %.2f ms without, want %.2f ms", 1e3*short, 1e3*prefillStep(none, 64), 1e3*want)
	}
	long := 32768
	if prefillStep(none, long) <= moeLayers*floorUs*1e-6+overheads {
		t.Fatalf("a %d-token prompt should outlast the floor: %.1f ms", long, 1e3*prefillStep(none, long))
	}
	if a, b := prefillStep(none, long), prefillStep(floored, long); a != b {
		t.Errorf("%d-token prompt: %.2f ms with the floor, %.2f ms without", long, 1e3*b, 1e3*a)
	}
	if a, b := decodeStep(none, 8, 1000), decodeStep(floored, 8, 1000); a != b {
		t.Errorf("decode step: %.3f ms with the floor, %.3f ms without", 1e3*b, 1e3*a)
	}
	if a, b := prefillStep(build("meta-llama/Llama-3.1-70B", 0), 64), prefillStep(build("meta-llama/Llama-3.1-70B", floorUs), 64); a != b {
		t.Errorf("dense model: %.3f ms with the floor, %.3f ms without", 1e3*b, 1e3*a)
	}
}

// The MoE layer cost is added to every iteration of an MoE model, decode
// and prompt alike, once per MoE layer; dense models do not pay it.
func TestMoELayerCost(t *testing.T) {
	const layerUs = 40
	build := func(model string, layer float64) *Worker { return termsWorker(t, model, "h200_sxm", TRTLLM, 0, layer) }
	none, with := build("deepseek-ai/DeepSeek-V3", 0), build("deepseek-ai/DeepSeek-V3", layerUs)
	want := float64(none.Config().Model.MoELayers()) * layerUs * 1e-6
	for name, f := range map[string]func(*Worker) float64{
		"decode": func(w *Worker) float64 { return decodeStep(w, 16, 2000) },
		"prompt": func(w *Worker) float64 { return prefillStep(w, 2048) },
	} {
		if got := f(with) - f(none); !near(got, want, 1e-12) {
			t.Errorf("%s step: +%.4f ms, want +%.4f ms", name, 1e3*got, 1e3*want)
		}
	}
	if a, b := decodeStep(build("meta-llama/Llama-3.1-70B", 0), 16, 2000), decodeStep(build("meta-llama/Llama-3.1-70B", layerUs), 16, 2000); a != b {
		t.Errorf("dense model: %.3f ms with the cost, %.3f ms without", 1e3*b, 1e3*a)
	}
}

func near(a, b, tol float64) bool { return a-b <= tol && b-a <= tol }

// The TTFT floor is the backend's floor per routed expert times the
// experts of every MoE layer, 0 for dense models, and no iteration's time
// changes with it.
func TestTTFTFloor(t *testing.T) {
	const floorUs = 8
	build := func(model string, us float64) *Worker {
		p := MustDefaultParams().Clone()
		p.Backends[TRTLLM].MoETTFTFloorExpertUs = us
		return catalogWorker(t, model, "b200_sxm", "", Config{Backend: TRTLLM, Weights: catalog.FP8, TP: 8}, p)
	}
	none, with := build("deepseek-ai/DeepSeek-R1", 0), build("deepseek-ai/DeepSeek-R1", floorUs)
	m := with.Config().Model
	if want := float64(m.MoELayers()*m.MoE.Experts) * floorUs * 1e-6; none.TTFTFloor() != 0 || !near(with.TTFTFloor(), want, 1e-12) || want == 0 {
		t.Errorf("floor %.1f ms (%.1f ms at 0), want %.1f ms", 1e3*with.TTFTFloor(), 1e3*none.TTFTFloor(), 1e3*want)
	}
	if a, b := prefillStep(none, 64), prefillStep(with, 64); a != b {
		t.Errorf("prompt step: %.3f ms with the floor, %.3f ms without", 1e3*b, 1e3*a)
	}
	if d := build("meta-llama/Llama-3.1-70B", floorUs).TTFTFloor(); d != 0 {
		t.Errorf("dense model: floor %.1f ms", 1e3*d)
	}
}
