package healthfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
)

func node(t testing.TB) *inventory.Node {
	t.Helper()
	c := catalog.MustDefault()
	p, err := profiles.Lookup(c, "hgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := profiles.Discover(c, p, profiles.Node{Name: "n", GPUs: 2, MIGLayout: []string{"3g.40gb"}})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestParse(t *testing.T) {
	inv := node(t)
	gpu, mig := inv.GPUs[0].UUID, inv.GPUs[1].MIG.Instances[0].UUID
	for _, tc := range []struct {
		name, line string
		want       plugin.HealthEvent
		err        string
	}{
		{"GPU unhealthy", `{"uuid": "` + gpu + `", "healthy": false, "reason": "XID 79"}`, plugin.HealthEvent{UUID: gpu, Reason: "XID 79"}, ""},
		{"MIG device recovers", `{"uuid": "` + mig + `", "healthy": true}`, plugin.HealthEvent{UUID: mig, Healthy: true}, ""},
		{"reason defaults", `{"uuid": "` + gpu + `"}`, plugin.HealthEvent{UUID: gpu, Reason: "reported unhealthy"}, ""},
		{"unknown device", `{"uuid": "GPU-nope"}`, plugin.HealthEvent{}, `uuid: "GPU-nope" is not a GPU or MIG device`},
		{"no uuid", `{"healthy": false}`, plugin.HealthEvent{}, "uuid: required"},
		{"unknown field", `{"uuid": "` + gpu + `", "healty": true}`, plugin.HealthEvent{}, `unknown field "healty"`},
		{"not JSON", `GPU-0 down`, plugin.HealthEvent{}, "want {"},
		{"two objects", `{"uuid": "` + gpu + `"} {}`, plugin.HealthEvent{}, "one JSON object a line"},
		{"too long", `{"uuid": "` + strings.Repeat("x", maxHealthLine) + `"}`, plugin.HealthEvent{}, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.line), inv)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

// follow watches path and returns the events and a call that waits for
// the next one.
func follow(ctx context.Context, t *testing.T, path string, inv *inventory.Node) (<-chan plugin.HealthEvent, func() plugin.HealthEvent) {
	t.Helper()
	events, err := (&Source{Path: path, Inv: inv, Poll: 5 * time.Millisecond}).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return events, func() plugin.HealthEvent {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-ctx.Done():
			t.Fatal("no event")
		}
		return plugin.HealthEvent{}
	}
}

// The source follows appends, waits for a line's end, skips bad lines and
// comments, and starts before the file exists.
func TestSourceFollowsTheFile(t *testing.T) {
	inv := node(t)
	gpu := inv.GPUs[0].UUID
	path := filepath.Join(t.TempDir(), "health.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, next := follow(ctx, t, path, inv)
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write("# injected faults\nnot json\n{\"uuid\": \"" + gpu + "\", \"reason\": \"XID 48\"}\n{\"uuid\": \"" + gpu)
	if ev := next(); ev.UUID != gpu || ev.Healthy || ev.Reason != "XID 48" {
		t.Errorf("first event %+v", ev)
	}
	select {
	case ev := <-events:
		t.Fatalf("a partial line produced %+v", ev)
	case <-time.After(50 * time.Millisecond):
	}
	write("\", \"healthy\": true}\n")
	if ev := next(); ev.UUID != gpu || !ev.Healthy {
		t.Errorf("second event %+v", ev)
	}
	cancel()
	for range events { // closed when ctx ends
	}
}

func TestSourceNeedsPathAndInventory(t *testing.T) {
	if _, err := (&Source{}).Watch(context.Background()); err == nil {
		t.Error("no error")
	}
}

func FuzzParse(f *testing.F) {
	inv := node(f)
	f.Add([]byte(`{"uuid": "` + inv.GPUs[0].UUID + `", "healthy": false, "reason": "XID 79"}`))
	f.Add([]byte(`{"uuid": ""}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := Parse(line, inv)
		if err == nil && ev.UUID == "" {
			t.Fatalf("accepted %q without a device", line)
		}
	})
}

// A file rewritten shorter is read again from its start, and a line too
// long to be an event is skipped whole, not taken as a new line midway.
func TestSourceTruncationAndLongLines(t *testing.T) {
	inv := node(t)
	gpu := inv.GPUs[0].UUID
	path := filepath.Join(t.TempDir(), "health.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, next := follow(ctx, t, path, inv)
	long := `{"uuid": "` + strings.Repeat("x", 2*maxHealthLine) + `"}` + "\n"
	if err := os.WriteFile(path, []byte(long+`{"uuid": "`+gpu+`", "reason": "XID 48"}`+"\n"+long), 0o644); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Reason != "XID 48" {
		t.Fatalf("first event %+v", ev)
	}
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(path, []byte(`{"uuid": "`+gpu+`", "healthy": true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ev := next(); !ev.Healthy {
		t.Fatalf("after the rewrite: %+v", ev)
	}
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(50 * time.Millisecond):
	}
}
