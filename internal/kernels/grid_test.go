package kernels

import (
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestGridInterpolatesLogLog(t *testing.T) {
	g := NewGrid(2)
	// latency = m * n^2 (a power law): log-log interpolation is exact.
	for _, m := range []float64{1, 4, 16} {
		for _, n := range []float64{2, 8} {
			g.Add([]float64{m, n}, m*n*n)
		}
	}
	for _, tc := range []struct {
		key  []float64
		want float64
	}{
		{[]float64{4, 8}, 256},                    // measured
		{[]float64{2, 8}, 128},                    // between m keys
		{[]float64{4, 4}, 64},                     // between n keys
		{[]float64{8, 4}, 128},                    // both
		{[]float64{32, 8}, 2048},                  // above m: slope 1 continues
		{[]float64{4, 16}, 4 * 16 * 16},           // above n: slope 2 continues (the cap)
		{[]float64{0.5, 2}, 0.5 * 4},              // below m: slope 1 (the cap)
		{[]float64{4, 1}, 4 * math.Pow(1, 1) * 2}, // below n: slope capped at 1
	} {
		got, _, ok := g.Lookup(tc.key)
		if !ok || !near(got, tc.want) {
			t.Errorf("Lookup(%v) = %v, %v; want %v", tc.key, got, ok, tc.want)
		}
	}
}

func TestGridSparseAndEdges(t *testing.T) {
	g := NewGrid(2)
	g.Add([]float64{1, 10}, 1)
	g.Add([]float64{1, 20}, 2)
	g.Add([]float64{3, 10}, 3) // (3, 20) never measured
	// Between m = 1 and 3 at n = 20: m = 3 has no n = 20, so it answers
	// from its only key (clamped), and the level interpolates.
	if v, _, ok := g.Lookup([]float64{2, 20}); !ok || v <= 2 || v >= 3.01 {
		t.Errorf("sparse lookup %v %v", v, ok)
	}
	// A level with one key answers at it and reports where.
	one := NewGrid(1)
	one.Add([]float64{8}, 5)
	if v, at, ok := one.Lookup([]float64{64}); !ok || v != 5 || at[0] != 8 {
		t.Errorf("single key: %v at %v %v", v, at, ok)
	}
	// Smaller is never slower: a falling segment extrapolates flat.
	f := NewGrid(1)
	f.Add([]float64{2}, 4)
	f.Add([]float64{4}, 3)
	if v, _, _ := f.Lookup([]float64{1}); v != 4 {
		t.Errorf("below a falling segment: %v, want 4", v)
	}
	if _, _, ok := NewGrid(1).Lookup([]float64{1}); ok {
		t.Error("empty grid answered")
	}
	if _, _, ok := g.Lookup([]float64{1}); ok {
		t.Error("wrong key length answered")
	}
	// Repeated keys average; nonsense latencies are not recorded.
	r := NewGrid(1)
	r.Add([]float64{1}, 2)
	r.Add([]float64{1}, 4)
	r.Add([]float64{1}, math.NaN())
	r.Add([]float64{1}, -1)
	if v, _, _ := r.Lookup([]float64{1}); v != 3 || r.Rows() != 2 {
		t.Errorf("averaged %v over %d rows", v, r.Rows())
	}
}

func TestParseTableErrors(t *testing.T) {
	for _, tc := range []struct{ name, csv, want string }{
		{"missing column", "m,latency\n1,2\n", `no column "n"`},
		{"bad latency", "m,n,latency\n1,2,fast\n", `line 2: latency "fast"`},
		{"zero latency", "m,n,latency\n1,2,0\n", "want a positive number"},
		{"ragged", "m,n,latency\n1,2\n", "wrong number of fields"},
		{"empty", "", "header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parseTable("t.csv", strings.NewReader(tc.csv), []string{"m", "n", "latency"}, func(row) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	s := newSet("t", "b", "v", GPU{MemBW: 1e12, BF16FLOPS: 1e15})
	err := parseTable("t.csv", strings.NewReader("m,n,latency\n1,x,2\n"), []string{"m", "n", "latency"}, func(r row) error {
		return s.add(Sample{Op: OpAllReduce, Key: []float64{r.num(0), r.num(1)}, Latency: r.num(2)}, keepAll)
	})
	if err == nil || !strings.Contains(err.Error(), "key 2") {
		t.Errorf("a key that is not a number: %v", err)
	}
}

func FuzzParseTable(f *testing.F) {
	f.Add("gemm_dtype,m,n,k,latency\nfp8,1,2,3,0.5\nbfloat16,16,4096,4096,0.1\n")
	f.Add("m,n,k,latency\n")
	f.Fuzz(func(t *testing.T, csv string) {
		s := newSet("t", "b", "v", GPU{MemBW: 1e12, BF16FLOPS: 1e15})
		_ = parseTable("fuzz.csv", strings.NewReader(csv), []string{"gemm_dtype", "m", "n", "k", "latency"}, func(r row) error {
			return s.add(Sample{Op: OpGEMM, Dtype: r.str(0), Key: []float64{r.num(1), r.num(2), r.num(3)}, Latency: r.num(4)}, keepAll)
		})
		for _, g := range s.GEMM {
			v, _, ok := g.Lookup([]float64{7, 7, 7})
			if ok && !(v > 0) {
				t.Fatalf("lookup answered %v", v)
			}
		}
	})
}

func keepAll(Sample) bool { return true }
