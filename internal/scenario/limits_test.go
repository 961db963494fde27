package scenario

import (
	"strings"
	"testing"
)

// burstDoc adds a burst of 10 users for 30 s at start with a ramp.
func burstDoc(doc func(rate, isl, dur, extra string) string, start, ramp string) string {
	d := doc("{constant: 1}", "{fixed: 100}", "60", "")
	return strings.Replace(d, "osl: {fixed: 10}}", "osl: {fixed: 10}, burst: {count: 10, startSeconds: "+start+", durationSeconds: 30, rampSeconds: "+ramp+", isl: {fixed: 10}, osl: {fixed: 5}}}", 1)
}

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
		"max below median":    {doc("{constant: 1}", "{lognormal: {median: 2000, sigma: 0.6, max: 10}}", "60", ""), "workload.isl.lognormal: max 10 is below the median 2000"},
		"min above mean":      {doc("{constant: 1}", "{normal: {mean: 100, std: 10, min: 500}}", "60", ""), "workload.isl.normal: min 500 is above the mean 100"},
		"huge fixed":          {doc("{constant: 1}", "{fixed: 100000000}", "60", ""), "workload.isl.fixed"},
		"huge replicas":       {strings.Replace(doc("{constant: 1}", "{fixed: 100}", "60", ""), "replicas: 1", "replicas: 10000000", 1), "deployment.agg.replicas"},
		"no workers":          {strings.Replace(doc("{constant: 1}", "{fixed: 100}", "60", ""), "replicas: 1", "replicas: 0", 1), "deployment.agg.replicas: 0 and no planner section"},
		"two documents":       {doc("{constant: 1}", "{fixed: 100}", "60", "---\nmodel: x"), "YAML documents"},
		"dp x replicas":       {strings.Replace(doc("{constant: 1}", "{fixed: 100}", "60", ""), "replicas: 1", "dp: 8, replicas: 2000", 1), "deployment.agg: 2000 replicas of dp 8 make 16000 engines"},
		"huge dp":             {strings.Replace(doc("{constant: 1}", "{fixed: 100}", "60", ""), "replicas: 1", "dp: 100000000000000000, replicas: 1", 1), "deployment.agg: 1 replicas of dp"},
		"step after the end":  {doc("{step: {base: 1, peak: 2, start: 60, end: 90}}", "{fixed: 100}", "60", ""), "workload.rate.step: start 60 is at or past the scenario's end"},
		"ramp after the end":  {doc("{ramp: {from: 1, to: 2, start: 100, end: 200}}", "{fixed: 100}", "60", ""), "workload.rate.ramp: start 100"},
		"burst after the end": {burstDoc(doc, "60", "0"), "workload.burst.startSeconds: 60 is at or past the scenario's end"},
		"ramp past the burst": {burstDoc(doc, "10", "31"), "workload.burst.rampSeconds: 31 is longer than the burst"},
		"short form fraction": {doc("1", "100.5", "60", ""), "workload.isl: 100.5 where a whole number is expected"},
		"short form negative": {doc("-1", "100", "60", ""), "workload.rate.constant"},
		"short form huge":     {doc("1", "100000000", "60", ""), "workload.isl.fixed"},
		"short form text":     {doc("1", "many", "60", ""), "workload.isl"},
		"prefill in agg":      {strings.Replace(doc("{constant: 1}", "{fixed: 100}", "60", ""), "replicas: 1}}", "replicas: 1}, prefill: {replicas: 1}}", 1), "deployment.prefill: not used here (mode agg runs deployment.agg)"},
		"users in poisson":    {strings.Replace(doc("{constant: 1}", "{fixed: 100}", "60", ""), "kind: poisson,", "kind: poisson, users: {count: 3},", 1), "workload.users: not used here"},
		"rate with users":     {strings.Replace(doc("{constant: 1}", "{fixed: 100}", "60", ""), "kind: poisson,", "kind: users, users: {count: 3},", 1), "workload.rate: not used here"},
	}
	for name, tc := range cases {
		if _, err := build(t, tc.doc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %s", name, err, tc.want)
		}
	}
}

// A bare number is the constant it names: the short and long forms give
// the same run.
func TestShortForms(t *testing.T) {
	doc := func(rate, isl string) string {
		return `model: Qwen/Qwen3-8B
gpu: h100_sxm
deployment: {mode: agg, agg: {replicas: 1}}
workload: {kind: poisson, rate: ` + rate + `, isl: ` + isl + `, osl: {fixed: 10}}
durationSeconds: 30
seed: 3`
	}
	long, err := load(t, doc("{constant: 2}", "{fixed: 300}"))
	if err != nil {
		t.Fatal(err)
	}
	short, err := load(t, doc("2", "300"))
	if err != nil {
		t.Fatal(err)
	}
	if *short.Workload.Rate.Constant != 2 || *short.Workload.ISL.Fixed != 300 || short.Workload.Rate.Step != nil || short.Workload.ISL.LogNormal != nil {
		t.Errorf("short forms read as %+v / %+v", short.Workload.Rate, short.Workload.ISL)
	}
	if *long.Workload.Rate.Constant != 2 || *long.Workload.ISL.Fixed != 300 {
		t.Errorf("long forms read as %+v / %+v", long.Workload.Rate, long.Workload.ISL)
	}
}
