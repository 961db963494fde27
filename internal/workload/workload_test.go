package workload

import (
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

func drain(t *testing.T, s Source) []Request {
	t.Helper()
	var out []Request
	for {
		r, ok, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, r)
	}
}

func TestPoissonRateAndDeterminism(t *testing.T) {
	gen := func(seed uint64) []Request {
		p, err := NewPoisson(Constant(20), Fixed{4000}, Fixed{500}, 1000, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return drain(t, p)
	}
	a := gen(1)
	// 20,000 expected; the standard deviation of a Poisson count is sqrt(20,000) = 141.
	if n := float64(len(a)); math.Abs(n-20000) > 5*141 {
		t.Fatalf("%d arrivals in 1000 s at 20/s", len(a))
	}
	b := gen(1)
	if len(a) != len(b) || a[100] != b[100] {
		t.Fatal("the same seed must give the same arrivals")
	}
	if c := gen(2); len(c) == len(a) && c[100] == a[100] {
		t.Fatal("another seed should give other arrivals")
	}
	for i := 1; i < len(a); i++ {
		if a[i].At < a[i-1].At || a[i].At >= 1000 {
			t.Fatalf("arrival %d at %g out of order or range", i, a[i].At)
		}
	}
}

func TestNonHomogeneousRates(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	p, _ := NewPoisson(Step{Base: 2, Peak: 20, Start: 100, End: 200}, Fixed{1}, Fixed{1}, 300, rng)
	in, out := 0, 0
	for _, r := range drain(t, p) {
		if r.At >= 100 && r.At < 200 {
			in++
		} else {
			out++
		}
	}
	// 2000 expected inside the burst, 400 outside.
	if in < 1800 || in > 2200 || out < 300 || out > 500 {
		t.Fatalf("burst %d (want ~2000), outside %d (want ~400)", in, out)
	}
	d := Diurnal{Mean: 10, Amplitude: 0.5, Period: 100, Phase: 0}
	if d.At(0) != 15 || math.Abs(d.At(50)-5) > 1e-9 || d.Max(100) != 15 {
		t.Fatalf("diurnal: %g %g", d.At(0), d.At(50))
	}
	r := Ramp{From: 1, To: 5, Start: 10, End: 20}
	if r.At(0) != 1 || r.At(15) != 3 || r.At(30) != 5 {
		t.Fatal("ramp")
	}
	if _, err := NewPoisson(Constant(0), Fixed{1}, Fixed{1}, 10, rng); err == nil {
		t.Fatal("zero rate must be rejected")
	}
}

func TestDistributions(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const n = 20000
	var sum float64
	var logs []float64
	for i := 0; i < n; i++ {
		sum += float64(Normal{Mean: 1000, Std: 100}.Sample(rng))
		logs = append(logs, float64(LogNormal{Median: 500, Sigma: 0.8, Max: 100000}.Sample(rng)))
	}
	if m := sum / n; math.Abs(m-1000) > 5 {
		t.Errorf("normal mean %g", m)
	}
	sort.Float64s(logs)
	if med := logs[n/2]; math.Abs(med-500) > 25 {
		t.Errorf("log-normal median %g", med)
	}
	e, err := NewEmpirical([]int{10, 20}, []float64{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	hi := 0
	for i := 0; i < n; i++ {
		if e.Sample(rng) == 20 {
			hi++
		}
	}
	if f := float64(hi) / n; math.Abs(f-0.75) > 0.02 {
		t.Errorf("empirical weight 3/4 drawn %g of the time", f)
	}
	if _, err := NewEmpirical(nil, nil); err == nil {
		t.Error("empty empirical accepted")
	}
	if v := (Normal{Mean: -50, Std: 1}).Sample(rng); v != 1 {
		t.Errorf("token counts are at least 1, got %d", v)
	}
}

func TestAzureTraceReplay(t *testing.T) {
	f, err := os.Open(sharedtest.Path(t, "traces", "azure_llm_2023_code.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := NewReplay(f, FormatAzure, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := drain(t, p)
	if len(all) < 8000 || all[0].At != 0 {
		t.Fatalf("%d requests, first at %g", len(all), all[0].At)
	}
	span := all[len(all)-1].At
	if span < 3000 || span > 4000 {
		t.Fatalf("trace spans %g s, want about an hour", span)
	}
	f.Seek(0, 0)
	fast, _ := NewReplay(f, FormatAzure, ReplayOptions{Speedup: 2, From: 600, To: 1200})
	win := drain(t, fast)
	if len(win) == 0 || win[len(win)-1].At >= 300 {
		t.Fatalf("window of 600 s at speed-up 2 should span < 300 s: %d requests, last %g", len(win), win[len(win)-1].At)
	}
}

func TestReplayFormatsAndErrors(t *testing.T) {
	cases := []struct {
		format, body string
		want         int
		err          string
	}{
		{FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,10,2\n2023-11-16 18:17:04.9799600,20,3\n", 2, ""},
		{FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,10,2\nyesterday,20,3\n", 0, "line 3: TIMESTAMP"},
		{FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,ten,2\n", 0, "line 2: ContextTokens"},
		{FormatAzure, "time,in,out\n", 0, "line 1: header"},
		{FormatAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:05.0,10,2\n2023-11-16 18:17:04.0,20,3\n", 0, "line 3: timestamp goes back"},
		{FormatMooncake, "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 10, \"hash_ids\": [1,2]}\n\n{\"timestamp\": 1500, \"input_length\": 7, \"output_length\": 3}\n", 2, ""},
		{FormatMooncake, "{\"timestamp\": 0, \"input_len\": 100}\n", 0, "line 1"},
		{FormatGpuplane, "{\"at\": 0.5, \"isl\": 4000, \"osl\": 500}\n{\"at\": 1, \"isl\": 10}\n", 0, "line 2: need at"},
		{"parquet", "", 0, "use azure, mooncake or gpuplane"},
		// A byte-order mark (spreadsheet and Windows exports) is no part of the first field or line.
		{FormatAzure, "\ufeffTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,10,2\n", 1, ""},
		{FormatMooncake, "\ufeff{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 10}\n", 1, ""},
		{FormatGpuplane, "\ufeff{\"at\": 0.5, \"isl\": 4000, \"osl\": 500}\n", 1, ""},
	}
	for _, tc := range cases {
		p, err := NewReplay(strings.NewReader(tc.body), tc.format, ReplayOptions{})
		var got []Request
		if err == nil {
			for {
				r, ok, e := p.Next()
				if e != nil || !ok {
					err = e
					break
				}
				got = append(got, r)
			}
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: error %v, want %q", tc.format, tc.body, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != tc.want {
			t.Errorf("%s: %d requests, err %v", tc.format, len(got), err)
		}
	}
	// Options that would put every arrival at NaN or infinity are refused.
	for _, opt := range []ReplayOptions{{Speedup: math.NaN()}, {Speedup: math.Inf(1)}, {Speedup: -2}, {From: math.NaN()}, {To: math.Inf(1)}} {
		if _, err := NewReplay(strings.NewReader(""), FormatGpuplane, opt); err == nil || !strings.Contains(err.Error(), "need speedup > 0") {
			t.Errorf("options %+v: error %v", opt, err)
		}
	}
	p, _ := NewReplay(strings.NewReader("{\"timestamp\": 1000, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 2500, \"input_length\": 1, \"output_length\": 1}\n"), FormatMooncake, ReplayOptions{})
	rs := drain(t, p)
	if rs[1].At != 1.5 {
		t.Errorf("mooncake milliseconds: second arrival at %g s, want 1.5", rs[1].At)
	}
}

// A trace without line breaks fails on its first long line instead of
// being read whole.
func TestTraceLineLimit(t *testing.T) {
	long := "TIMESTAMP,ContextTokens,GeneratedTokens\n" + strings.Repeat("9", 2<<20)
	r, err := NewReplay(strings.NewReader(long), FormatAzure, ReplayOptions{})
	if err == nil {
		_, _, err = r.Next()
	}
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("got %v, want a line-length error", err)
	}
	if _, err := NewReplay(strings.NewReader(strings.Repeat("x", 2<<20)), FormatAzure, ReplayOptions{}); err == nil {
		t.Error("a header line of 2 MiB was accepted")
	}
}
