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

// firstError replays body until it fails or ends (at most three
// requests) and returns the failure.
func firstError(t *testing.T, body, format string) error {
	t.Helper()
	r, err := NewReplay(strings.NewReader(body), format, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, ok, err := r.Next(); err != nil || !ok {
			return err
		}
	}
	return nil
}

// A bad second line fails with its number and what is wrong, in every
// line-reading format: a line past the bound rather than being read into
// memory whole, a key given twice rather than a decoder keeping the last
// value and replaying a size the trace may not hold.
func TestReplayRefusesABadLine(t *testing.T) {
	first := map[string]string{
		FormatGpuplane: `{"at": 0, "isl": 10, "osl": 5}` + "\n",
		FormatMooncake: `{"timestamp": 0, "input_length": 10, "output_length": 5}` + "\n",
	}
	repeated := map[string][2]string{ // the line, the key it repeats
		FormatGpuplane: {`{"at": 1, "isl": 10, "osl": 5, "isl": 20}`, "isl"},
		FormatMooncake: {`{"timestamp": 1, "output_length": 5, "input_length": 10, "output_length": 6}`, "output_length"},
	}
	for format, line := range first {
		for _, tc := range []struct{ second, want string }{
			{strings.Repeat("x", maxTraceLine+1), "trace line 2: longer than 1024 KiB"},
			{repeated[format][0], "trace line 2: " + repeated[format][1] + ": given twice"},
		} {
			err := firstError(t, line+tc.second+"\n", format)
			if err == nil || !strings.Contains(err.Error(), format+" "+tc.want) {
				t.Errorf("%s: %v, want %q", format, err, tc.want)
			}
		}
	}
}
