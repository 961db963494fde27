package scenario

import (
	"strings"
	"testing"
)

// Numbers that would make a run unbounded or meaningless are refused
// before any work, naming the field.
func TestLimits(t *testing.T) {
	base := `model: Qwen/Qwen3-8B
gpu: h100_sxm
deployment: {mode: agg, agg: {replicas: 1}}
workload: {kind: poisson, rate: RATE, isl: ISL, osl: {fixed: 10}}
slo: {ttftMs: 500, itlMs: 30}
durationSeconds: DUR
EXTRA`
	doc := func(rate, isl, dur, extra string) string {
		r := strings.NewReplacer("RATE", rate, "ISL", isl, "DUR", dur, "EXTRA", extra)
		return r.Replace(base)
	}
	cases := map[string]struct{ doc, want string }{
		"rate 1e9":            {doc("{constant: 1e9}", "{fixed: 100}", "60", ""), "workload.rate"},
		"duration 1e12":       {doc("{constant: 1}", "{fixed: 100}", "1e12", ""), "durationSeconds"},
		"interval 1e-6":       {doc("{constant: 1}", "{fixed: 100}", "60", "intervalSeconds: 1e-6"), "intervalSeconds"},
		"negative rate":       {doc("{constant: -2}", "{fixed: 100}", "60", ""), "workload.rate.constant"},
		"step ends first":     {doc("{step: {base: 1, peak: 2, start: 50, end: 10}}", "{fixed: 100}", "60", ""), "workload.rate.step"},
		"diurnal amplitude 3": {doc("{diurnal: {mean: 1, amplitude: 3, period: 60}}", "{fixed: 100}", "60", ""), "workload.rate.diurnal"},
		"collapsed lognormal": {doc("{constant: 1}", "{lognormal: {median: 0.001, sigma: 1}}", "60", ""), "workload.isl.lognormal"},
		"negative sigma":      {doc("{constant: 1}", "{lognormal: {median: 100, sigma: -1}}", "60", ""), "workload.isl.lognormal"},
		"min above max":       {doc("{constant: 1}", "{normal: {mean: 100, std: 10, min: 50, max: 5}}", "60", ""), "workload.isl.normal"},
		"huge fixed":          {doc("{constant: 1}", "{fixed: 100000000}", "60", ""), "workload.isl.fixed"},
		"huge replicas":       {strings.Replace(doc("{constant: 1}", "{fixed: 100}", "60", ""), "replicas: 1", "replicas: 10000000", 1), "deployment.agg.replicas"},
		"two documents":       {doc("{constant: 1}", "{fixed: 100}", "60", "---\nmodel: x"), "YAML documents"},
		"dp x replicas":       {strings.Replace(doc("{constant: 1}", "{fixed: 100}", "60", ""), "replicas: 1", "dp: 8, replicas: 2000", 1), "deployment.agg: 2000 replicas of dp 8 make 16000 engines"},
		"huge dp":             {strings.Replace(doc("{constant: 1}", "{fixed: 100}", "60", ""), "replicas: 1", "dp: 100000000000000000, replicas: 1", 1), "deployment.agg: 1 replicas of dp"},
	}
	for name, tc := range cases {
		if _, err := build(t, tc.doc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %s", name, err, tc.want)
		}
	}
}
