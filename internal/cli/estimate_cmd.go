package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/serving"
	"github.com/gpuplane/gpuplane/internal/strict"
)

// estimateTable prints one estimate as a key/value table.
type estimateTable struct{ *estimate.Output }

func (t estimateTable) Header() []string { return []string{"METRIC", "VALUE"} }
func (t estimateTable) Rows() [][]string {
	o := t.Output
	rows := [][]string{
		{"model", o.Model}, {"device", o.Device}, {"backend", o.Backend}, {"mode", o.Mode},
		{"precision (weights/kv)", o.Precision + "/" + o.KV},
	}
	if o.Mode == "disagg" {
		rows = append(rows, []string{"prefill", fmt.Sprintf("%d worker(s) x tp%d%s", o.Prefill, o.PrefillTP, dpSuffix(o.PrefillDP, 0))},
			[]string{"decode", fmt.Sprintf("%d worker(s) x tp%d%s", o.Decode, o.DecodeTP, dpSuffix(o.DecodeDP, 0))},
			[]string{"kv transfer", kvTransfer(o.KVTransferMs, o.HandoffFixedMs)})
		if o.PoolsSized {
			rows = append(rows, []string{"pools", "sized to the concurrency (no worker counts given)"})
		}
	} else {
		rows = append(rows, []string{"parallelism", fmt.Sprintf("%d worker(s) x tp%d pp%d%s", o.Workers, o.TP, o.PP, dpSuffix(o.DP, o.EP))})
	}
	for _, n := range o.Notes {
		rows = append(rows, []string{"note", n})
	}
	rows = append(rows,
		[]string{"workload", fmt.Sprintf("isl %d, osl %d, concurrency %d", o.ISL, o.OSL, o.Concurrency)},
		[]string{"fits", fmt.Sprint(o.Fits)},
	)
	memRow := func(label string, m *perf.Memory) {
		if m != nil {
			state := ""
			if m.StateGiB > 0 {
				state = fmt.Sprintf(", linear-attention state %.1f GiB", m.StateGiB)
			}
			rows = append(rows, []string{label, fmt.Sprintf("weights %.1f GiB, activations %.1f GiB, reserve %.1f GiB%s, kv cache %.1f GiB of %.1f GiB",
				m.WeightsGiB, m.ActivationGiB, m.ReserveGiB, state, m.KVCacheGiB, m.DeviceGiB)})
		}
	}
	if o.Mode == "disagg" {
		memRow("prefill memory per GPU", o.Memory)
		memRow("decode memory per GPU", o.DecodeMemory)
	} else {
		memRow("memory per GPU", o.Memory)
	}
	rows = append(rows, []string{"kv cache tokens", fmt.Sprint(o.KVCacheTokens)}, []string{"max concurrency", fmt.Sprint(o.MaxConcurrency)})
	if !o.Fits {
		return append(rows, []string{"error", o.Error})
	}
	rows = append(rows,
		[]string{"ttft", fmt.Sprintf("%.1f ms (p50 %.1f, p99 %.1f)", o.TTFTms, o.TTFTP50ms, o.TTFTP99ms)})
	if o.TTFTFloorMs > 0 {
		rows = append(rows, []string{"ttft floor", fmt.Sprintf("%.1f ms: no request's ttft is below it (the backend's latency per routed expert of each MoE layer, outside the engine's iterations)", o.TTFTFloorMs)})
	}
	if o.DecodeWaitMs > 0 {
		rows = append(rows, []string{"decode wait", fmt.Sprintf("%.1f ms of the ttft from the kv hand-off to a decode engine taking the request (the step in progress; a slot, past max concurrency %d)", o.DecodeWaitMs, o.MaxConcurrency)})
	}
	// One output token has no second one to time: a prompt-only query has
	// no TPOT and no decode speed.
	promptOnly := o.OSL < 2
	if promptOnly {
		rows = append(rows, []string{"tpot", "none (osl 1: every request ends at its first token)"})
	} else {
		rows = append(rows,
			[]string{"tpot", fmt.Sprintf("%.2f ms (p99 %.2f)", o.TPOTms, o.TPOTP99ms)})
	}
	switch {
	case o.TPOTInterval == nil && o.TTFTInterval != nil:
		rows = append(rows, []string{"80% interval", fmt.Sprintf("ttft %.0f-%.0f ms (where measured %s runs landed, held out)%s",
			o.TTFTInterval[0], o.TTFTInterval[1], o.IntervalKind, outsideInterval("ttft", o.TTFTms, o.TTFTInterval))})
	case o.TTFTInterval != nil && o.TPOTInterval != nil:
		rows = append(rows, []string{"80% interval", fmt.Sprintf("ttft %.0f-%.0f ms, tpot %.2f-%.2f ms (where measured %s runs landed, held out)%s%s",
			o.TTFTInterval[0], o.TTFTInterval[1], o.TPOTInterval[0], o.TPOTInterval[1], o.IntervalKind,
			outsideInterval("ttft", o.TTFTms, o.TTFTInterval), outsideInterval("tpot", o.TPOTms, o.TPOTInterval))})
	}
	perUser := fmt.Sprintf(", %.1f per user", o.OutputTokensPerSPerUser)
	if promptOnly {
		perUser = ""
	}
	rows = append(rows,
		[]string{"output tokens/s", fmt.Sprintf("%.0f (%.0f per GPU%s)", o.OutputTokensPerS, o.OutputTokensPerSPerGPU, perUser)},
		[]string{"requests/s", fmt.Sprintf("%.2f", o.RequestsPerS)},
		[]string{"gpus", fmt.Sprint(o.GPUs)},
	)
	if b := o.Breakdown; b != nil {
		rows = append(rows,
			[]string{"decode step", fmt.Sprintf("%.2f ms at %d sequences of %.0f tokens a decode engine: %s", b.DecodeStep.Ms, b.DecodeStep.Sequences, b.DecodeStep.Context, partsText(b.DecodeStep))},
			[]string{"tpot split", fmt.Sprintf("%.2f ms decode steps, %.2f ms the rest (%s)", b.TPOTDecodeMs, b.TPOTRestMs, restText(o.Mode))},
			[]string{"prompt alone", fmt.Sprintf("%.1f ms for %d tokens in %d iteration(s): %s", b.PromptStep.Ms, b.PromptStep.Tokens, b.PromptStep.Iterations, partsText(b.PromptStep))})
	}
	return rows
}

// restText says what the rest of TPOT beyond decode steps is: prompt
// iterations where workers prefill too, the batch's ups and downs where
// decode workers only decode.
func restText(mode string) string {
	if mode == "disagg" {
		return "the decode batch's changes about its mean; decode workers carry no prompts"
	}
	return "iterations that also carry prompts"
}

// partsText lists a step's parts largest first, in ms and as shares.
func partsText(s estimate.StepShare) string {
	ps := s.Largest()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%s %.2f (%.0f%%)", p.Name, p.Ms, 100*p.Ms/s.Ms)
	}
	return strings.Join(out, ", ")
}

// kvTransfer is the hand-off time, with its fixed part named when there is one.
func kvTransfer(total, fixed float64) string {
	if fixed > 0 {
		return fmt.Sprintf("%.2f ms (%.0f ms fixed hand-off of the backend, %.2f ms moving the cache)", total, fixed, total-fixed)
	}
	return fmt.Sprintf("%.2f ms", total)
}

// precisionFollowsModel clears the reference scenario's precision from q
// when a model is named (by --model, or named is true) and --precision is
// not given, so the model's own is used, as --precision's help says. It
// reports whether --precision was left to the model.
func precisionFollowsModel(fl *pflag.FlagSet, named bool, q *estimate.Query) bool {
	own := !fl.Changed("precision")
	if own && (named || fl.Changed("model")) {
		q.Precision = ""
	}
	return own
}

// dpSuffix names attention data parallelism and expert parallelism where used.
func dpSuffix(dp, ep int) string {
	s := ""
	if dp > 1 {
		s += fmt.Sprintf(" dp%d", dp)
	}
	if ep > 1 {
		s += fmt.Sprintf(" ep%d", ep)
	}
	return s
}

// lineResult is one line of `estimate -f`: an estimate or an error.
type lineResult struct {
	out *estimate.Output
	err error
}

func (l lineResult) MarshalJSON() ([]byte, error) {
	if l.out == nil {
		return json.Marshal(map[string]string{"error": l.err.Error()})
	}
	return json.Marshal(l.out)
}

type lineResults []lineResult

func (l lineResults) Items() []any { return items(l) }
func (l lineResults) Header() []string {
	return []string{"#", "MODEL", "DEVICE", "MODE", "TTFT(ms)", "TPOT(ms)", "TOK/S", "TOK/S/GPU", "FITS", "ERROR"}
}
func (l lineResults) Rows() [][]string {
	var rows [][]string
	for i, r := range l {
		if r.out == nil || r.out.Result == nil {
			rows = append(rows, []string{fmt.Sprint(i + 1), "", "", "", "", "", "", "", "false", r.err.Error()})
			continue
		}
		o := r.out
		rows = append(rows, []string{fmt.Sprint(i + 1), o.Model, o.Device, o.Mode, fmt.Sprintf("%.1f", o.TTFTms), fmt.Sprintf("%.2f", o.TPOTms),
			fmt.Sprintf("%.0f", o.OutputTokensPerS), fmt.Sprintf("%.0f", o.OutputTokensPerSPerGPU), fmt.Sprint(o.Fits), o.Error})
	}
	return rows
}

func newEstimateCmd(g *globals) *cobra.Command {
	q := estimate.Defaults()
	var file, modelConfig string
	var sameNode bool
	cmd := &cobra.Command{
		Use:   "estimate",
		Short: "Predict TTFT, TPOT and throughput of a model on a device",
		Long: `Predict serving performance at a fixed concurrency: the engine is run iteration by
iteration (continuous batching, chunked prefill, KV-cache limits) on the analytic
performance model, in steady state. With no flags it estimates the reference scenario
(Qwen3-32B in fp8 on one H100 SXM, 4000/500 tokens, 32 users).

  gpuplane estimate --model Qwen/Qwen3-32B --gpu h100_sxm --precision fp8 --tp 2 -o json
  gpuplane estimate --gpu h100_sxm --slice 3g.40gb --model Qwen/Qwen3-8B
  gpuplane estimate --mode disagg --prefill-tp 2 --decode-tp 4 --prefill-workers 2 --decode-workers 1
  gpuplane estimate -f queries.jsonl -o jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, m, err := g.envWithModel(modelConfig)
			if err != nil {
				return err
			}
			if m != nil && !cmd.Flags().Changed("model") {
				q.Model = m.Name
			}
			ownPrecision := precisionFollowsModel(cmd.Flags(), m != nil, &q)
			if cmd.Flags().Changed("same-node") {
				q.SameNode = &sameNode
			}
			f, _ := g.format()
			if file != "" {
				return runBatch(g, env, q, ownPrecision, file, f)
			}
			out, err := estimate.Run(env, q, serving.Options{})
			var fe *perf.FitError
			if errors.As(err, &fe) && out != nil {
				out.Error = err.Error()
				if f != output.Table {
					_ = output.Write(g.stdout, f, out)
				}
				return err
			}
			if err != nil {
				return err
			}
			if f == output.Table {
				return output.Write(g.stdout, f, estimateTable{out})
			}
			return output.Write(g.stdout, f, out)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "file", "f", "", "JSON-lines file of queries, or one JSON array of them (keys are flag names with _ for -); - for stdin")
	fl.StringVar(&modelConfig, "model-config", "", "Hugging Face config.json of a model not in the catalog")
	addQueryFlags(fl, &q, &sameNode)
	return cmd
}

// addWorkerFlags registers what one worker is: model, device, precision,
// engine and tensor parallelism (estimate and emulate share them).
func addWorkerFlags(fl *pflag.FlagSet, q *estimate.Query) {
	fl.StringVar(&q.Model, "model", q.Model, "model name or alias (see: gpuplane catalog models)")
	fl.StringVar(&q.GPU, "gpu", q.GPU, "GPU name or alias (see: gpuplane catalog gpus); gpu:slice also works")
	fl.StringVar(&q.Slice, "slice", "", "MIG profile (3g.40gb) or vGPU/time-sliced fraction (1/2) of the GPU")
	fl.StringVar(&q.Precision, "precision", q.Precision, "weight precision: bf16, fp8, int8 (w8a8), w4a16 (AWQ/GPTQ) or fp4 (default: a named model's own, a quantised checkpoint's or the native one; fp8 for the reference scenario when no model is named)")
	fl.StringVar(&q.Backend, "backend", q.Backend, "serving engine: vllm, sglang or trtllm")
	fl.IntVar(&q.TP, "tp", q.TP, "tensor parallelism of an aggregated worker")
	fl.IntVar(&q.SpecTokens, "spec-tokens", 0, "speculative decoding (MTP, EAGLE): tokens drafted per decode step (default 0: none)")
	fl.Float64Var(&q.SpecAccept, "spec-accept", 0, "speculative decoding: mean tokens a sequence gains per decode step, 1 to spec-tokens+1 (the engine's mean acceptance length)")
}

func addQueryFlags(fl *pflag.FlagSet, q *estimate.Query, sameNode *bool) {
	addWorkerFlags(fl, q)
	fl.StringVar(&q.KVPrecision, "kv-precision", "", "KV-cache precision: bf16, fp8 or int8 (default: the backend's default)")
	fl.StringVar(&q.Mode, "mode", q.Mode, "agg (prefill and decode on the same workers) or disagg")
	fl.IntVar(&q.PP, "pp", q.PP, "pipeline parallelism of an aggregated worker")
	fl.IntVar(&q.EP, "ep", 0, "expert parallelism (MoE models; must divide tp x dp)")
	fl.IntVar(&q.DP, "dp", 0, "attention data parallelism: ranks of tp GPUs with their own requests and KV cache, sharing the MoE layers")
	fl.IntVar(&q.Workers, "workers", q.Workers, "aggregated workers sharing the load")
	fl.IntVar(&q.PrefillTP, "prefill-tp", 0, "tensor parallelism of a prefill worker (mode disagg)")
	fl.IntVar(&q.DecodeTP, "decode-tp", 0, "tensor parallelism of a decode worker (mode disagg)")
	fl.IntVar(&q.PrefillPP, "prefill-pp", 0, "pipeline parallelism of a prefill worker (mode disagg)")
	fl.IntVar(&q.DecodePP, "decode-pp", 0, "pipeline parallelism of a decode worker (mode disagg)")
	fl.IntVar(&q.PrefillEP, "prefill-ep", 0, "expert parallelism of a prefill worker (mode disagg; default: --ep)")
	fl.IntVar(&q.DecodeEP, "decode-ep", 0, "expert parallelism of a decode worker (mode disagg; default: --ep)")
	fl.IntVar(&q.PrefillDP, "prefill-dp", 0, "attention data parallelism of a prefill worker (mode disagg)")
	fl.IntVar(&q.DecodeDP, "decode-dp", 0, "attention data parallelism of a decode worker (mode disagg)")
	fl.IntVar(&q.PrefillWorkers, "prefill-workers", q.PrefillWorkers, "prefill workers (mode disagg; default: as many as keep up with the decode pool at this concurrency)")
	fl.IntVar(&q.DecodeWorkers, "decode-workers", q.DecodeWorkers, "decode workers (mode disagg; default: as many as hold every user's sequence at once)")
	fl.BoolVar(sameNode, "same-node", false, "prefill and decode share a node or NVLink domain (default: when they fit in one)")
	fl.IntVar(&q.ISL, "isl", q.ISL, "input (prompt) tokens per request")
	fl.IntVar(&q.OSL, "osl", q.OSL, "output tokens per request")
	fl.IntVar(&q.Concurrency, "concurrency", q.Concurrency, "concurrent users, each sending its next request when the last ends")
	fl.IntVar(&q.MaxBatchedTokens, "max-batched-tokens", 0, "token budget of one engine iteration (default: the backend's)")
	fl.IntVar(&q.MaxSeqs, "max-seqs", 0, "sequences per iteration (default: the backend's)")
	fl.StringVar(&q.KVAdmission, "kv-admission", "", "how engines admit requests into the KV cache: whole (reserve each request's prompt and output, never evict; TensorRT-LLM's default) or on-demand (allocate as tokens come, evict when full; vLLM's and SGLang's) (default: the backend's)")
	fl.Float64Var(&q.GPUMemoryUtilization, "gpu-memory-utilization", 0, "share of GPU memory the engine uses (default: the backend's)")
	fl.StringVar(&q.Harness, "harness", "", "benchmark client to reproduce: steady (a running deployment), burst (every user fires at once, all requests measured) or queued (burst, requests stamped when queued)")
	fl.IntVar(&q.RequestsPerUser, "requests-per-user", 0, "requests each user sends (default 4 steady, 5 burst or queued)")
	fl.BoolVar(&q.Breakdown, "breakdown", false, "split a decode step (at the mean running batch) and a prompt into their parts: GEMMs, experts, attention, communication, overheads")
}

// maxBatchLine bounds one line of estimate -f, so a file without line
// breaks cannot exhaust memory.
const maxBatchLine = 4 << 20

// runBatch answers a JSONL file of queries, in order, on all cores. Each
// line starts from the command's flags, so shared settings need not repeat;
// with ownPrecision (no --precision given) a line that names a model but no
// precision gets that model's own.
func runBatch(g *globals, env estimate.Env, base estimate.Query, ownPrecision bool, file string, f output.Format) error {
	var r io.Reader = os.Stdin
	if file != "-" {
		fh, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("-f: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	var lines [][]byte
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxBatchLine)
	for sc.Scan() {
		if len(lines) == maxBatchQueries {
			return fmt.Errorf("-f %s: more than %d queries; every answer is held until the batch ends, so split the file into batches of at most %d lines", file, maxBatchQueries, maxBatchQueries)
		}
		line := sc.Bytes()
		if len(lines) == 0 {
			line = strict.TrimBOM(line)
		}
		lines = append(lines, append([]byte(nil), line...))
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("-f %s: line %d is longer than %d MiB; give one JSON object a line (or a JSON array of them, broken over lines)", file, len(lines)+1, maxBatchLine>>20)
	} else if err != nil {
		return fmt.Errorf("-f %s: %w", file, err)
	}
	if len(lines) == 0 {
		return fmt.Errorf("-f %s: no queries (the input is empty); give one JSON object a line, e.g. {\"model\": \"Qwen/Qwen3-8B\", \"concurrency\": 8}", file)
	}
	unit := "line"
	if queries, isArray, err := arrayQueries(lines); err != nil {
		return fmt.Errorf("-f %s: %w", file, err)
	} else if isArray {
		lines, unit = queries, "query"
	}
	results := make(lineResults, len(lines))
	var wg sync.WaitGroup
	var done atomic.Int64
	work := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = answerLine(env, base, ownPrecision, lines[i], fmt.Sprintf("%s %d", unit, i+1))
				done.Add(1)
			}
		}()
	}
	stop := progress(g.stderr, "estimate", len(lines), &done)
	defer stop()
	for i := range lines {
		work <- i
	}
	close(work)
	wg.Wait()
	g.log.Debug("batch estimate done", "queries", len(lines))
	if err := output.Write(g.stdout, f, results); err != nil {
		return err
	}
	return results.verdict(g.stderr, unit)
}

// maxBatchQueries bounds `estimate -f`: answers are kept to write them in
// order (a table needs them all), about a kilobyte each.
var maxBatchQueries = 1_000_000

// verdict says on stderr how many lines went unanswered, since a batch
// that is mostly errors otherwise looks like a finished run, and fails
// the command when none was answered: then the input is wrong as a whole.
func (l lineResults) verdict(stderr io.Writer, unit string) error {
	failed, first := 0, -1
	for i, r := range l {
		if r.err != nil {
			failed++
			if first < 0 {
				first = i
			}
		}
	}
	switch {
	case failed == 0:
		return nil
	case failed == len(l):
		return fmt.Errorf("-f: none of the %d queries was answered; the first: %w", len(l), l[first].err)
	}
	fmt.Fprintf(stderr, "estimate: %d of %d queries not answered (each %s's error is in its row; the first is %s %d)\n", failed, len(l), unit, unit, first+1)
	return nil
}

func answerLine(env estimate.Env, base estimate.Query, ownPrecision bool, line []byte, at string) lineResult {
	if len(bytes.TrimSpace(line)) == 0 {
		return lineResult{err: fmt.Errorf("%s: empty line; want a JSON object", at)}
	}
	q := base
	if t := bytes.TrimSpace(line); t[0] != '{' {
		return lineResult{err: fmt.Errorf("%s: %.20q is not a JSON object; each query is one JSON object", at, t)}
	}
	dec := json.NewDecoder(bytes.NewReader(strict.WholeNumbers(line)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		if nan := strict.NonJSONNumber(line); nan != nil {
			err = nan
		} else if errors.Is(err, io.ErrUnexpectedEOF) {
			return lineResult{err: fmt.Errorf("%s: the query object does not end on its line; each query is one JSON object on one line (jq -c . FILE flattens a pretty-printed file)", at)}
		}
		return lineResult{err: fmt.Errorf("%s: %w (keys are estimate's flag names with _ for -)", at, strict.NameTypeError(err))}
	}
	if dec.More() {
		return lineResult{err: fmt.Errorf("%s: text after the query object; one object a line", at)}
	}
	if err := strict.DuplicateKey(line); err != nil {
		return lineResult{err: fmt.Errorf("%s: %w", at, err)}
	}
	if ownPrecision {
		var keys struct{ Model, Precision *string }
		if json.Unmarshal(line, &keys) == nil && keys.Model != nil && keys.Precision == nil {
			q.Precision = "" // the line's model's native or checkpoint precision
		}
	}
	out, err := estimate.Run(env, q, serving.Options{})
	if err != nil {
		if out != nil {
			out.Error = err.Error()
			return lineResult{out: out, err: err}
		}
		return lineResult{err: fmt.Errorf("%s: %w", at, err)}
	}
	return lineResult{out: out}
}

// isTerminal reports whether w is a terminal (progress lines go only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress prints "label: done/total" on a terminal stderr while work that
// has run for more than a second goes on; the returned func ends it.
func progress(w io.Writer, label string, total int, done *atomic.Int64) func() {
	if !isTerminal(w) {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		start := time.Now()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		shown := false
		for {
			select {
			case <-quit:
				if shown {
					fmt.Fprintf(w, "\r%s: %d/%d done in %s\n", label, done.Load(), total, time.Since(start).Round(time.Millisecond))
				}
				return
			case <-tick.C:
				if time.Since(start) > time.Second {
					shown = true
					fmt.Fprintf(w, "\r%s: %d/%d", label, done.Load(), total)
				}
			}
		}
	}()
	return func() { close(quit); <-finished }
}

// outsideInterval says so when an estimate lies outside its own interval,
// which reads as a contradiction otherwise: the interval is where held-out
// runs of its kind measured, and they came out mostly on one side.
func outsideInterval(name string, v float64, iv *[2]float64) string {
	switch {
	case iv == nil:
		return ""
	case v < iv[0]:
		return fmt.Sprintf("; the %s estimate is below it: held-out runs of this kind measured slower than predicted more than 90%% of the time", name)
	case v > iv[1]:
		return fmt.Sprintf("; the %s estimate is above it: held-out runs of this kind measured faster than predicted more than 90%% of the time", name)
	}
	return ""
}

// arrayQueries reads an input that is one JSON array of query objects (a
// .json file rather than JSON lines), one query an element; isArray is
// false for any other input.
func arrayQueries(lines [][]byte) (queries [][]byte, isArray bool, err error) {
	// Only the first non-blank line says; JSON lines are not copied.
	for _, l := range lines {
		if t := bytes.TrimSpace(l); len(t) > 0 {
			if t[0] != '[' {
				return nil, false, nil
			}
			break
		}
	}
	all := bytes.TrimSpace(bytes.Join(lines, []byte("\n")))
	if len(all) == 0 {
		return nil, false, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(all, &elems); err != nil {
		if nan := strict.NonJSONNumber(all); nan != nil {
			err = nan
		}
		return nil, true, fmt.Errorf("the input starts with [ but is not a JSON array of queries: %w", err)
	}
	switch {
	case len(elems) == 0:
		return nil, true, fmt.Errorf("an empty JSON array; give one query object an element, or one a line")
	case len(elems) > maxBatchQueries:
		return nil, true, fmt.Errorf("more than %d queries; split the array into batches of at most %d", maxBatchQueries, maxBatchQueries)
	}
	queries = make([][]byte, len(elems))
	for i, e := range elems {
		queries[i] = e
	}
	return queries, true, nil
}
