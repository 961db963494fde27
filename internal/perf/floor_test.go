package perf

import (
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// The MoE prompt floor bounds an iteration with prompt tokens from below:
// a short prompt takes the floor (per MoE layer) plus the overheads, a long
// one whose GPU work exceeds it is unchanged, and neither decode-only
// iterations nor dense models feel it.
func TestMoEPromptFloor(t *testing.T) {
	c := catalog.MustDefault()
	d, _ := c.Device("b200_sxm", "")
	build := func(model string, floorUs float64) *Worker {
		m, err := c.Model(model)
		if err != nil {
			t.Fatal(err)
		}
		p := MustDefaultParams().Clone()
		p.Backends[SGLang].MoEPromptFloorUs = floorUs
		w, err := NewWorker(Config{Model: m, Device: d, Backend: SGLang, Weights: catalog.FP8, TP: 8}, p)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	const floorUs = 3000
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

func near(a, b, tol float64) bool { return a-b <= tol && b-a <= tol }
