package workload

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuplane/gpuplane/internal/strict"
)

// Trace formats.
const (
	// FormatAzure is the Azure LLM inference trace CSV: TIMESTAMP,ContextTokens,GeneratedTokens.
	FormatAzure = "azure"
	// FormatMooncake is Mooncake-style JSONL: {"timestamp": ms, "input_length": n, "output_length": n}.
	FormatMooncake = "mooncake"
	// FormatGpuplane is gpuplane's JSONL: {"at": seconds, "isl": n, "osl": n}.
	FormatGpuplane = "gpuplane"
)

// ReplayOptions shape a replay.
type ReplayOptions struct {
	// Speedup divides the trace's time axis (2 = twice as fast). Default 1.
	Speedup float64
	// From and To keep arrivals in [From, To) seconds of the trace (To 0 = to the end).
	From, To float64
}

// Replay streams a trace. Arrival times are relative to the first row.
type Replay struct {
	format string
	opt    ReplayOptions
	csv    *csv.Reader
	lines  *bufio.Scanner
	line   int
	t0     float64
	begun  bool
	last   float64
	served int
}

// NewReplay reads a trace of the given format from r.
func NewReplay(r io.Reader, format string, opt ReplayOptions) (*Replay, error) {
	if opt.Speedup == 0 {
		opt.Speedup = 1
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !finite(opt.Speedup) || !finite(opt.From) || !finite(opt.To) ||
		opt.Speedup <= 0 || opt.From < 0 || opt.To < 0 || opt.To > 0 && opt.To <= opt.From {
		return nil, fmt.Errorf("replay: need speedup > 0 and 0 <= from < to (got %g, %g, %g)", opt.Speedup, opt.From, opt.To)
	}
	p := &Replay{format: format, opt: opt}
	r = skipBOM(r)
	switch format {
	case FormatAzure:
		p.csv = csv.NewReader(&lineLimit{r: r, max: maxTraceLine})
		p.csv.ReuseRecord = true
		head, err := p.csv.Read()
		if err != nil {
			return nil, fmt.Errorf("azure trace: read header: %w", err)
		}
		p.line = 1
		if len(head) < 3 || strings.TrimSpace(head[0]) != "TIMESTAMP" || strings.TrimSpace(head[1]) != "ContextTokens" || strings.TrimSpace(head[2]) != "GeneratedTokens" {
			return nil, fmt.Errorf("azure trace line 1: header %q, want TIMESTAMP,ContextTokens,GeneratedTokens", strings.Join(head, ","))
		}
	case FormatMooncake, FormatGpuplane:
		p.lines = bufio.NewScanner(r)
		p.lines.Buffer(make([]byte, 64*1024), maxTraceLine)
	default:
		return nil, fmt.Errorf("trace format %q: use azure, mooncake or gpuplane", format)
	}
	return p, nil
}

// Next implements Source.
func (p *Replay) Next() (Request, bool, error) {
	for {
		t, isl, osl, ok, err := p.row()
		if err != nil {
			return Request{}, false, err
		}
		if !ok {
			return Request{}, false, p.none()
		}
		if !p.begun {
			p.t0, p.begun = t, true
		}
		if t < p.last {
			return Request{}, false, fmt.Errorf("%s trace line %d: timestamp goes back in time; the trace must be sorted by arrival", p.format, p.line)
		}
		p.last = t
		rel := t - p.t0
		if rel < p.opt.From {
			continue
		}
		if p.opt.To > 0 && rel >= p.opt.To {
			return Request{}, false, p.none()
		}
		p.served++
		return Request{At: (rel - p.opt.From) / p.opt.Speedup, ISL: isl, OSL: osl}, true, nil
	}
}

// none is the end of a replay: an error when it served no request at all,
// which would simulate nothing and report it as a result.
func (p *Replay) none() error {
	switch {
	case p.served > 0:
		return nil
	case !p.begun:
		return fmt.Errorf("%s trace: no requests (header only, or empty)", p.format)
	default:
		return fmt.Errorf("%s trace: no request at or after fromSeconds %g; its requests span %.0f s", p.format, p.opt.From, p.last-p.t0)
	}
}

const azureTime = "2006-01-02 15:04:05.9999999"

func (p *Replay) row() (t float64, isl, osl int, ok bool, err error) {
	if p.csv != nil {
		rec, err := p.csv.Read()
		if errors.Is(err, io.EOF) {
			return 0, 0, 0, false, nil
		}
		p.line++
		if err != nil {
			return 0, 0, 0, false, fmt.Errorf("azure trace line %d: %w", p.line, err)
		}
		if len(rec) < 3 {
			return 0, 0, 0, false, fmt.Errorf("azure trace line %d: want 3 columns, got %d", p.line, len(rec))
		}
		ts, err := time.Parse(azureTime, strings.TrimSpace(rec[0]))
		if err != nil {
			return 0, 0, 0, false, fmt.Errorf("azure trace line %d: TIMESTAMP %q: want YYYY-MM-DD hh:mm:ss.fffffff", p.line, rec[0])
		}
		isl, e1 := strconv.Atoi(strings.TrimSpace(rec[1]))
		osl, e2 := strconv.Atoi(strings.TrimSpace(rec[2]))
		if e1 != nil || e2 != nil || isl < 1 || osl < 1 {
			return 0, 0, 0, false, fmt.Errorf("azure trace line %d: ContextTokens %q and GeneratedTokens %q must be integers >= 1", p.line, rec[1], rec[2])
		}
		return float64(ts.UnixNano()) / 1e9, isl, osl, true, nil
	}
	for p.lines.Scan() {
		p.line++
		b := bytes.TrimSpace(p.lines.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := strict.DuplicateKey(b); err != nil {
			return 0, 0, 0, false, fmt.Errorf("%s trace line %d: %w", p.format, p.line, err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if p.format == FormatMooncake {
			var m struct {
				Timestamp    *float64 `json:"timestamp"`
				InputLength  int      `json:"input_length"`
				OutputLength int      `json:"output_length"`
				HashIDs      []int64  `json:"hash_ids"` // prefix-cache block ids; not used for timing
			}
			if err := dec.Decode(&m); err != nil {
				return 0, 0, 0, false, fmt.Errorf("mooncake trace line %d: %w", p.line, err)
			}
			if m.Timestamp == nil || m.InputLength < 1 || m.OutputLength < 1 {
				return 0, 0, 0, false, fmt.Errorf("mooncake trace line %d: need timestamp (ms), input_length >= 1 and output_length >= 1", p.line)
			}
			return *m.Timestamp / 1e3, m.InputLength, m.OutputLength, true, nil
		}
		var g struct {
			At  *float64 `json:"at"`
			ISL int      `json:"isl"`
			OSL int      `json:"osl"`
		}
		if err := dec.Decode(&g); err != nil {
			return 0, 0, 0, false, fmt.Errorf("gpuplane trace line %d: %w", p.line, err)
		}
		if g.At == nil || g.ISL < 1 || g.OSL < 1 {
			return 0, 0, 0, false, fmt.Errorf("gpuplane trace line %d: need at (seconds), isl >= 1 and osl >= 1", p.line)
		}
		return *g.At, g.ISL, g.OSL, true, nil
	}
	if err := p.lines.Err(); errors.Is(err, bufio.ErrTooLong) {
		return 0, 0, 0, false, fmt.Errorf("%s trace line %d: longer than %d KiB; a trace holds one request a line", p.format, p.line+1, maxTraceLine>>10)
	} else if err != nil {
		return 0, 0, 0, false, fmt.Errorf("%s trace line %d: %w", p.format, p.line+1, err)
	}
	return 0, 0, 0, false, nil
}

// maxTraceLine bounds one line of a trace: a file without line breaks must
// fail, not be read into memory whole.
const maxTraceLine = 1 << 20

// lineLimit fails a read once a line grows past max bytes.
type lineLimit struct {
	r    io.Reader
	max  int
	cur  int
	line int
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			l.cur, l.line = 0, l.line+1
			continue
		}
		if l.cur++; l.cur > l.max {
			return 0, fmt.Errorf("line %d is longer than %d bytes: not a trace", l.line+1, l.max)
		}
	}
	return n, err
}

// skipBOM drops a UTF-8 byte-order mark at the start of r: spreadsheets
// and Windows tools write one, and it would be read as part of the first
// field or line.
func skipBOM(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		_, _ = br.Discard(3)
	}
	return br
}
