package strict

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadFile drops a leading UTF-8 byte-order mark (JSON decoders refuse
// it), keeps the rest as it is, and refuses a file over the limit unread.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ in, want string }{
		{"\ufeff{\"a\": 1}", `{"a": 1}`},
		{`{"a": 1}`, `{"a": 1}`},
		{"a: \ufeff", "a: \ufeff"},
	} {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, []byte(tc.in), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := ReadFile(p); err != nil || string(b) != tc.want {
			t.Errorf("ReadFile(%q) = %q, %v; want %q", tc.in, b, err, tc.want)
		}
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(big); err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Errorf("a file over the limit: %v", err)
	}
}
