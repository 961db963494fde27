package kernels

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeGz(t *testing.T, path, body string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

const gdnHeader = "framework,kernel_source,phase,batch_size,seq_len,num_tokens,d_model,d_conv,num_k_heads,head_k_dim,num_v_heads,head_v_dim,model_name,latency\n"

// The gated delta-net table is keyed by kernel and phase over value heads,
// batch and sequence length (1 in decode). A row of another shape is left
// out and counted, never filed under the wrong key; an unknown phase is an
// error that names it.
func TestLoadGDN(t *testing.T) {
	for _, tc := range []struct {
		name, rows, err string
	}{
		{"prefill and decode", "x,chunk_gated_delta_rule,context,2,1024,2048,4096,4,16,128,32,128,m,0.5\n" +
			"x,fused_recurrent_gated_delta_rule,generation,8,7,8,4096,4,16,128,32,128,m,0.02\n", ""},
		{"another shape is skipped", "x,chunk_gated_delta_rule,context,2,1024,2048,4096,4,16,128,32,128,m,0.5\n" +
			"x,fused_recurrent_gated_delta_rule,generation,8,7,8,4096,4,16,128,32,128,m,0.02\n" +
			"x,chunk_gated_delta_rule,context,2,1024,2048,4096,4,8,128,32,128,m,9\n", ""},
		{"another phase", "x,chunk_gated_delta_rule,verify,2,1024,2048,4096,4,16,128,32,128,m,0.5\n", `phase "verify"`},
	} {
		dir := t.TempDir()
		writeGz(t, filepath.Join(dir, "gdn_perf.csv.gz"), gdnHeader+tc.rows)
		s := newSet("sys", "be", "v", GPU{MemBW: 1e12, BF16FLOPS: 1e15})
		err := s.loadGDN(dir, func(Sample) bool { return true })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want := strings.Count(tc.rows, ",4,8,128,"); s.Skipped[gdnOtherShape] != want {
			t.Errorf("%s: %d rows skipped, want %d", tc.name, s.Skipped[gdnOtherShape], want)
		}
		if v, ok := s.GDNTime("chunk_gated_delta_rule/context", 32, 2, 1024); !ok || v != 0.5 {
			t.Errorf("prefill lookup %g (%v), want the row's 0.5", v, ok)
		}
		// Decode is one token per sequence, whatever seq_len says.
		if v, ok := s.GDNTime("fused_recurrent_gated_delta_rule/generation", 32, 8, 1); !ok || v != 0.02 {
			t.Errorf("decode lookup %g (%v), want the row's 0.02", v, ok)
		}
		// Twice the batch beyond the table: twice the time (linear in tokens).
		if v, ok := s.GDNTime("chunk_gated_delta_rule/context", 32, 4, 1024); !ok || v != 1.0 {
			t.Errorf("extrapolated prefill %g (%v), want 1.0", v, ok)
		}
	}
}
