package listenaddr

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		addr, want string // want "" is accepted
	}{
		{"127.0.0.1:8080", ""},
		{":9464", ""},
		{"[::1]:0", ""},
		{"localhost:65535", ""},
		{"notanaddr", `--addr: "notanaddr": address notanaddr: missing port in address; give host:port`},
		{":99999", `--addr: ":99999": port "99999", want 0 to 65535`},
		{":-1", `port "-1"`},
		{"host:http", `port "http"`},
		{"", `--addr: "": missing port`},
		{"1.2.3.4:80:90", `too many colons`},
	} {
		err := Check("--addr", tc.addr, ":8080")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.addr, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want %q", tc.addr, err, tc.want)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{":80", "a:b", "[::]:1", "", ":99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		if err := Check("f", addr, ":1"); err != nil && !strings.HasPrefix(err.Error(), "f: ") {
			t.Errorf("%q: error does not name the field: %v", addr, err)
		}
	})
}
