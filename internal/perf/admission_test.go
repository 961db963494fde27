package perf

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

func TestParseAdmission(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Admission
		ok   bool
	}{{"", "", true}, {"whole", AdmitWhole, true}, {" On-Demand ", AdmitOnDemand, true}, {"no-evict", "", false}, {"wholeish", "", false}} {
		got, err := ParseAdmission(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("ParseAdmission(%q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// A worker takes its backend's admission unless its config names one.
func TestWorkerAdmission(t *testing.T) {
	for _, tc := range []struct {
		be   Backend
		adm  Admission
		want bool
	}{{TRTLLM, "", true}, {VLLM, "", false}, {SGLang, "", false}, {TRTLLM, AdmitOnDemand, false}, {VLLM, AdmitWhole, true}} {
		w := catalogWorker(t, "Qwen/Qwen3-32B", "h100_sxm", "", Config{Backend: tc.be, Weights: catalog.FP8, TP: 1, Admission: tc.adm}, MustDefaultParams())
		if w.ReservesFullRequest() != tc.want {
			t.Errorf("%s with admission %q: reserves whole requests %v, want %v", tc.be, tc.adm, w.ReservesFullRequest(), tc.want)
		}
	}
	c := catalog.MustDefault()
	m, _ := c.Model("Qwen/Qwen3-32B")
	d, err := c.Device("h100_sxm", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewWorker(Config{Model: m, Device: d, TP: 1, Admission: "lazy"}, MustDefaultParams()); err == nil || !strings.Contains(err.Error(), "lazy") {
		t.Errorf("admission lazy: error %v; want one naming the value", err)
	}
}
