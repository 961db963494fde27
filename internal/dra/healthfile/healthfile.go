// Package healthfile is the health source of a node whose GPUs come from a
// device profile: it follows a file of JSON lines, one health event each,
// appended by a person or a test as NVML would report an XID.
package healthfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/gpuplane/gpuplane/internal/dra/inventory"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
)

// maxHealthLine bounds one event line; a longer one is an error, not a
// reason to grow memory without end.
const maxHealthLine = 4 << 10

// Line is one line of a health events file:
//
//	{"uuid": "GPU-...", "healthy": false, "reason": "XID 79"}
type Line struct {
	UUID    string `json:"uuid"`
	Healthy bool   `json:"healthy"`
	Reason  string `json:"reason,omitempty"`
}

// Parse decodes one line and checks that it names a device of
// inv (a GPU or a MIG device).
func Parse(line []byte, inv *inventory.Node) (plugin.HealthEvent, error) {
	if len(line) > maxHealthLine {
		return plugin.HealthEvent{}, fmt.Errorf("line of %d bytes, at most %d", len(line), maxHealthLine)
	}
	var l Line
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return plugin.HealthEvent{}, fmt.Errorf(`want {"uuid": "GPU-...", "healthy": false, "reason": "XID 79"}: %w`, err)
	}
	if dec.More() {
		return plugin.HealthEvent{}, errors.New("one JSON object a line; found more after it")
	}
	if l.UUID == "" {
		return plugin.HealthEvent{}, errors.New(`uuid: required, the GPU's or MIG device's UUID (see the node's ResourceSlices, attribute "uuid")`)
	}
	if !hasDevice(inv, l.UUID) {
		return plugin.HealthEvent{}, fmt.Errorf("uuid: %q is not a GPU or MIG device of this node (%d GPUs)", l.UUID, len(inv.GPUs))
	}
	if !l.Healthy && l.Reason == "" {
		l.Reason = "reported unhealthy"
	}
	return plugin.HealthEvent{UUID: l.UUID, Healthy: l.Healthy, Reason: l.Reason}, nil
}

func hasDevice(inv *inventory.Node, uuid string) bool {
	for _, g := range inv.GPUs {
		if g.UUID == uuid {
			return true
		}
		if g.MIG != nil {
			for _, in := range g.MIG.Instances {
				if in.UUID == uuid {
					return true
				}
			}
		}
	}
	return false
}

// Source follows a health events file. Lines that do not parse are logged
// with their number and skipped.
type Source struct {
	Path string
	Inv  *inventory.Node
	// Poll is how often the file is read (default 200 ms).
	Poll time.Duration
}

// Watch follows the file from its start until ctx ends; a file that does
// not exist yet is waited for.
func (h *Source) Watch(ctx context.Context) (<-chan plugin.HealthEvent, error) {
	if h.Path == "" || h.Inv == nil {
		return nil, errors.New("health file: path and inventory are required")
	}
	poll := h.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	out := make(chan plugin.HealthEvent)
	go func() {
		defer close(out)
		logger := klog.FromContext(ctx).WithValues("healthEvents", h.Path)
		var offset int64
		lineNo := 0
		var partial []byte
		skipping := false // inside a line already reported as too long
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			chunk, size, err := readFrom(h.Path, offset)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				logger.Error(err, "read health events")
			}
			if err == nil && size < offset {
				// Truncated or replaced: its events start again.
				logger.Info("health events file shrank; reading it from the start")
				offset, lineNo, partial, skipping = 0, 0, nil, false
				continue
			}
			offset += int64(len(chunk))
			partial = append(partial, chunk...)
			for {
				i := bytes.IndexByte(partial, '\n')
				if i < 0 {
					break
				}
				line := bytes.TrimSpace(partial[:i])
				partial = partial[i+1:]
				if skipping {
					skipping = false
					continue
				}
				lineNo++
				if len(line) == 0 || strings.HasPrefix(string(line), "#") {
					continue
				}
				ev, err := Parse(line, h.Inv)
				if err != nil {
					logger.Error(err, "health event skipped", "line", lineNo)
					continue
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
			if len(partial) > maxHealthLine {
				if !skipping {
					lineNo++
					logger.Error(fmt.Errorf("line longer than %d bytes", maxHealthLine), "health event skipped", "line", lineNo)
				}
				partial, skipping = nil, true
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return out, nil
}

// readFrom returns what the file holds after offset (at most 1 MiB a
// call) and the file's size.
func readFrom(path string, offset int64) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if st.Size() < offset {
		return nil, st.Size(), nil
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, 0, err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	return b, st.Size(), err
}
