package workload

import (
	"bytes"
	"strings"
	"testing"
)

// A replay that serves no request says so instead of ending quietly: a
// simulation of it would report an empty run as a result.
func TestReplayOfNothing(t *testing.T) {
	two := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.0,374,44\n2023-11-16 18:15:50.0,396,109\n"
	for _, tc := range []struct {
		name, body, format string
		opt                ReplayOptions
		want               string
	}{
		{"header only", "TIMESTAMP,ContextTokens,GeneratedTokens\n", FormatAzure, ReplayOptions{}, "azure trace: no requests"},
		{"empty JSONL", "", FormatGpuplane, ReplayOptions{}, "gpuplane trace: no requests"},
		{"window past the end", two, FormatAzure, ReplayOptions{From: 60}, "no request at or after fromSeconds 60; its requests span 4 s"},
		{"served", two, FormatAzure, ReplayOptions{From: 1}, ""},
	} {
		r, err := NewReplay(bytes.NewReader([]byte(tc.body)), tc.format, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			_, ok, err := r.Next()
			if err != nil {
				if tc.want == "" || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
				}
				break
			}
			if !ok {
				if tc.want != "" {
					t.Errorf("%s: ended quietly after %d requests, want %q", tc.name, n, tc.want)
				}
				break
			}
			n++
		}
	}
}

// A line past the bound fails with its number and the bound, in every
// line-reading format, rather than being read into memory whole.
func TestReplayRefusesAnOverlongLine(t *testing.T) {
	first := map[string]string{
		FormatGpuplane: `{"at": 0, "isl": 10, "osl": 5}` + "\n",
		FormatMooncake: `{"timestamp": 0, "input_length": 10, "output_length": 5}` + "\n",
	}
	for format, line := range first {
		body := line + strings.Repeat("x", maxTraceLine+1) + "\n"
		r, err := NewReplay(strings.NewReader(body), format, ReplayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var last error
		for i := 0; i < 3; i++ {
			if _, ok, err := r.Next(); err != nil || !ok {
				last = err
				break
			}
		}
		if last == nil || !strings.Contains(last.Error(), "trace line 2: longer than 1024 KiB") {
			t.Errorf("%s: %v, want line 2 named as longer than the bound", format, last)
		}
	}
}

// A trace line that gives a key twice is refused by its line and key: a
// decoder would keep the last value and replay a size the trace may not
// hold.
func TestReplayRefusesARepeatedKey(t *testing.T) {
	for format, body := range map[string]string{
		FormatGpuplane: `{"at": 0, "isl": 10, "osl": 5}` + "\n" + `{"at": 1, "isl": 10, "osl": 5, "isl": 20}` + "\n",
		FormatMooncake: `{"timestamp": 0, "input_length": 10, "output_length": 5}` + "\n" + `{"timestamp": 1, "output_length": 5, "input_length": 10, "output_length": 6}` + "\n",
	} {
		r, err := NewReplay(strings.NewReader(body), format, ReplayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var last error
		for i := 0; i < 3; i++ {
			if _, ok, err := r.Next(); err != nil || !ok {
				last = err
				break
			}
		}
		if last == nil || !strings.Contains(last.Error(), format+" trace line 2: ") || !strings.Contains(last.Error(), "given twice") {
			t.Errorf("%s: %v, want line 2's repeated key named", format, last)
		}
	}
}
