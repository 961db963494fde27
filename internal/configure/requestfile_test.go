package configure

import (
	"os"
	"strings"
	"testing"
)

func TestParseExampleFiles(t *testing.T) {
	for _, tc := range []struct {
		path, kind string
		want       Request
	}{
		{"../../examples/serving-request.yaml", ServingRequestKind, Request{Model: "Qwen/Qwen3-32B", Precision: "fp8", Backend: "vllm",
			ISL: 4000, OSL: 500, SLA: SLA{TTFTms: 500, ITLms: 30}, Pool: []PoolEntry{{Device: "h200_sxm", Count: 8}}, Pick: Throughput}},
		{"../../examples/dgdr.yaml", DGDRKind, Request{Model: "Qwen/Qwen3-32B-FP8", Backend: "vllm",
			ISL: 4000, OSL: 500, SLA: SLA{TTFTms: 500, ITLms: 30}, Pool: []PoolEntry{{Device: "h200_sxm", Count: 8, GPUsPerNode: 8}}}},
	} {
		data, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFile(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if f.Kind != tc.kind || f.Name == "" {
			t.Errorf("%s: kind %q name %q", tc.path, f.Kind, f.Name)
		}
		got := f.Request
		if got.Model != tc.want.Model || got.Precision != tc.want.Precision || got.Backend != tc.want.Backend || got.ISL != tc.want.ISL ||
			got.OSL != tc.want.OSL || got.SLA != tc.want.SLA || len(got.Pool) != 1 || got.Pool[0] != tc.want.Pool[0] || got.Pick != tc.want.Pick {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.path, got, tc.want)
		}
	}
}

func TestDGDRDefaultsAndLoad(t *testing.T) {
	f, err := ParseFile([]byte(`apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeploymentRequest
metadata: {name: x}
spec:
  model: Qwen/Qwen3-8B
  image: nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.4.0
  autoApply: true
  hardware: {gpuSku: h100_sxm, totalGpus: 16, vramMb: 81559}
  workload: {requestRate: 12.5}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := f.Request
	if r.ISL != 4000 || r.OSL != 1000 || r.SLA.TTFTms != 2000 || r.SLA.ITLms != 30 {
		t.Errorf("Dynamo's defaults not applied: %+v", r)
	}
	if r.Backend != "vllm" || r.Pick != LoadMatch || r.RequestRate != 12.5 {
		t.Errorf("backend %q pick %q rate %g", r.Backend, r.Pick, r.RequestRate)
	}
	if len(f.Notes) != 3 || !strings.Contains(strings.Join(f.Notes, "\n"), "spec.image") {
		t.Errorf("notes %q should name backend auto, image and autoApply", f.Notes)
	}
	if err := f.CheckHardware(testEnv()); err != nil {
		t.Errorf("81559 MiB is an H100 SXM: %v", err)
	}
	f.VRAMMiB = 24000
	if err := f.CheckHardware(testEnv()); err == nil || !strings.Contains(err.Error(), "spec.hardware.vramMb") {
		t.Errorf("a 24 GB card named h100_sxm should be refused, got %v", err)
	}
}

func TestRequestFileErrors(t *testing.T) {
	sr := func(spec string) string {
		return "apiVersion: gpuplane.io/v1alpha1\nkind: ServingRequest\nspec:\n" + spec
	}
	dg := func(spec string) string {
		return "apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeploymentRequest\nspec:\n  model: Qwen/Qwen3-8B\n" + spec
	}
	hw := "  hardware: {gpuSku: h100_sxm, totalGpus: 8}\n"
	cases := []struct{ name, doc, want string }{
		{"wrong kind", "apiVersion: v1\nkind: Pod\n", "want gpuplane.io/v1alpha1 ServingRequest"},
		{"old DGDR version", "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeploymentRequest\n", "nvidia.com/v1beta1"},
		{"unknown field", sr("  model: m\n  workload: {isl: 1, osl: 2, tokens: 3}\n"), "unknown field \"spec.workload.tokens\""},
		{"gpu and pool", sr("  model: m\n  workload: {isl: 10, osl: 10}\n  sla: {ttft: 1}\n  hardware: {gpu: l4, totalGpus: 1, pool: [{device: l4, count: 1}]}\n"), "not both"},
		{"gpu without count", sr("  model: m\n  workload: {isl: 10, osl: 10}\n  sla: {ttft: 1}\n  hardware: {gpu: l4}\n"), "spec.hardware.totalGpus"},
		{"missing workload", sr("  model: m\n  sla: {ttft: 1}\n  hardware: {gpu: l4, totalGpus: 1}\n"), "spec.workload"},
		{"no sla", sr("  model: m\n  workload: {isl: 10, osl: 10}\n  hardware: {gpu: l4, totalGpus: 1}\n"), "sla"},
		{"dgdr no sku", dg("  hardware: {totalGpus: 8}\n"), "spec.hardware.gpuSku"},
		{"dgdr no total", dg("  hardware: {gpuSku: h100_sxm}\n"), "spec.hardware.totalGpus"},
		{"dgdr modelCache", dg(hw + "  modelCache: {pvcName: weights}\n"), "spec.modelCache"},
		{"dgdr overrides", dg(hw + "  overrides: {trustRemoteCode: true}\n"), "spec.overrides"},
		{"dgdr features", dg(hw + "  features: {mocker: {enabled: true}}\n"), "spec.features"},
		{"dgdr two loads", dg(hw + "  workload: {requestRate: 1, concurrency: 4}\n"), "mutually exclusive"},
		{"dgdr fractional users", dg(hw + "  workload: {concurrency: 2.5}\n"), "spec.workload.concurrency"},
		{"dgdr latency", dg(hw + "  sla: {optimizationType: latency}\n"), "spec.sla.optimizationType"},
		{"dgdr unknown", dg(hw + "  planner: {}\n"), "unknown field \"spec.planner\""},
		{"dgdr bad backend", dg(hw + "  backend: tgi\n"), "backend"},
		{"confidence out of range", sr("  model: Qwen/Qwen3-8B\n  workload: {isl: 10, osl: 10}\n  sla: {ttft: 100}\n  hardware: {gpu: l4, totalGpus: 1}\n  confidence: 2\n"), "confidence: 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFile([]byte(tc.doc))
			if err == nil && (tc.want == "backend" || strings.HasPrefix(tc.want, "confidence")) {
				_, err = Search(testEnv(), f.Request, Options{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
