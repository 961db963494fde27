package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuplane/gpuplane/internal/configure"
	"github.com/gpuplane/gpuplane/internal/manifest"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/report"
	"github.com/gpuplane/gpuplane/internal/slo"
	"github.com/gpuplane/gpuplane/internal/strict"
)

// configureFlags are configure's own flags.
type configureFlags struct {
	req                    configure.Request
	gpu                    string
	totalGPUs, gpusPerNode int
	price                  float64
	poolFile, file, mode   string
	fromCluster            bool
	kubeconfig, selector   string
	classes                []string
	modelConfig            string
	pick                   string
	explain                bool
	emit, driver, name, ns string
	specDraft              string
	image, reportFile      string
}

// configureTable prints the winner, the ranked candidates and, with
// --explain, the reasons.
type configureTable struct {
	res     *configure.Result
	explain bool
}

func (t configureTable) priced() bool { return t.res.Best != nil && t.res.Best.CostPerHour > 0 }

func (t configureTable) Header() []string {
	sla := t.res.SLA
	h := []string{"#", "DEPLOYMENT", "GPUS", "USERS", "TTFT " + strings.ToUpper(slo.Stat(sla.TTFTPercentile)) + "(ms)",
		"ITL " + strings.ToUpper(slo.Stat(sla.ITLPercentile)) + "(ms)", "TTFT P99", "TOK/S", "TOK/S/GPU", "TOK/S/USER"}
	if t.priced() {
		h = append(h, "COST/H", "TOK/$")
	}
	return append(h, "SLO", "BINDING")
}

func (t configureTable) Rows() [][]string {
	var rows [][]string
	for _, c := range t.res.Candidates {
		slo := "met"
		if !c.MeetsSLO {
			slo = "MISSED"
		}
		row := []string{fmt.Sprint(c.Rank), configure.Describe(c), fmt.Sprintf("%.4g", c.GPUs), fmt.Sprint(c.Concurrency),
			fmt.Sprintf("%.0f", c.TTFTms), fmt.Sprintf("%.1f", c.ITLms), fmt.Sprintf("%.0f", c.TTFTP99ms), fmt.Sprintf("%.0f", c.TokensPerS),
			fmt.Sprintf("%.0f", c.TokensPerSPerGPU), fmt.Sprintf("%.1f", c.TokensPerSPerUser)}
		if t.priced() {
			row = append(row, fmt.Sprintf("%.2f", c.CostPerHour), fmt.Sprintf("%.0f", c.TokensPerDollar))
		}
		rows = append(rows, append(row, slo, c.Binding))
	}
	return rows
}

func newConfigureCmd(g *globals) *cobra.Command {
	f := &configureFlags{req: configure.Request{Model: "Qwen/Qwen3-32B", Precision: "fp8", Backend: "vllm", ISL: 4000, OSL: 500,
		SLA: configure.SLA{TTFTms: 500, ITLms: 30}}, gpu: "h200_sxm", totalGPUs: 8, pick: "throughput"}
	cmd := &cobra.Command{
		Use:   "configure",
		Short: "Find the deployment with the highest goodput under a TTFT/ITL SLO",
		Long: `Search aggregated and disaggregated deployments of a model over the devices a cluster
has (whole GPUs, MIG partitions, vGPU shares) for the highest goodput within the SLO.
Engines are profiled on the performance model, combined by rate matching, and the
finalists re-run as whole deployments. With no flags it searches Qwen3-32B in fp8 on
8 x h200_sxm for 4000/500-token requests at TTFT <= 500 ms and ITL <= 30 ms.

  gpuplane configure --model Qwen/Qwen3-32B --gpu h200_sxm --total-gpus 8 --ttft 500 --itl 30
  gpuplane configure --pool pool.yaml --pick load-match --request-rate 20 --explain
  gpuplane configure -f request.yaml --emit k8s > deploy.yaml
  gpuplane configure -f dgdr.yaml --emit dynamo --report configure.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runConfigure(g, cmd, f) },
	}
	fl := cmd.Flags()
	r := &f.req
	fl.StringVarP(&f.file, "file", "f", "", "request file: a gpuplane.io/v1alpha1 ServingRequest or a nvidia.com/v1beta1 DynamoGraphDeploymentRequest")
	fl.StringVar(&r.Model, "model", r.Model, "model name or alias (see: gpuplane catalog models)")
	fl.StringVar(&f.modelConfig, "model-config", "", "Hugging Face config.json of a model not in the catalog (searched unless --model names another)")
	fl.StringVar(&r.Precision, "precision", r.Precision, "weight precision: bf16, fp8, int8 (w8a8), w4a16 (AWQ/GPTQ) or fp4")
	fl.StringVar(&r.KVPrecision, "kv-precision", "", "KV-cache precision (default: the backend's)")
	fl.StringVar(&r.Backend, "backend", r.Backend, "serving engine: vllm, sglang or trtllm")
	fl.IntVar(&r.SpecTokens, "spec-tokens", 0, "speculative decoding (MTP, EAGLE): tokens drafted per decode step (default 0: none)")
	fl.Float64Var(&r.SpecAccept, "spec-accept", 0, "speculative decoding: mean tokens a sequence gains per decode step, 1 to spec-tokens+1")
	fl.IntVar(&r.ISL, "isl", r.ISL, "input (prompt) tokens per request")
	fl.IntVar(&r.OSL, "osl", r.OSL, "output tokens per request")
	fl.Float64Var(&r.SLA.TTFTms, "ttft", r.SLA.TTFTms, "time-to-first-token target in ms (0: none)")
	fl.Float64Var(&r.SLA.ITLms, "itl", r.SLA.ITLms, "inter-token latency target in ms (0: none)")
	fl.Float64Var(&r.SLA.E2Ems, "e2e", 0, "end-to-end latency target in ms (0: none)")
	fl.Float64Var(&r.SLA.TTFTPercentile, "ttft-percentile", 0, "percentile of requests whose TTFT must meet --ttft, e.g. 90 or 99 (0: the mean)")
	fl.Float64Var(&r.SLA.ITLPercentile, "itl-percentile", 0, "percentile of requests whose ITL must meet --itl, e.g. 90 or 99 (0: the mean)")
	fl.StringVar(&f.gpu, "gpu", f.gpu, "device kind of a homogeneous pool (gpu or gpu:slice)")
	fl.IntVar(&f.totalGPUs, "total-gpus", f.totalGPUs, "devices of --gpu in the pool")
	fl.IntVar(&f.gpusPerNode, "gpus-per-node", 0, "devices per node, bounding tensor parallelism (default: the GPU's NVLink domain)")
	fl.Float64Var(&f.price, "price", 0, "price of one --gpu device per hour (ranks by goodput per unit of price)")
	fl.BoolVar(&f.fromCluster, "pool-from-cluster", false, "the pool is the devices the cluster has free: its ResourceSlices less the allocated claims (--device-classes, --device-selector filter them)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --pool-from-cluster (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	fl.StringSliceVar(&f.classes, "device-classes", nil, "DeviceClasses whose devices --pool-from-cluster counts (default: gpu, mig and vgpu.gpuplane.io)")
	fl.StringVar(&f.selector, "device-selector", "", "CEL expression every device of --pool-from-cluster must satisfy")
	fl.StringVar(&f.poolFile, "pool", "", "YAML file listing the cluster's device kinds: pool: [{device, count, pricePerHour, gpusPerNode}]")
	fl.Float64Var(&r.MaxGPUs, "max-gpus", 0, "GPU budget in physical GPUs the devices occupy (two 3g.40gb fill one H100; default: the whole pool)")
	fl.Float64Var(&r.MaxCostPerHour, "max-cost", 0, "cost budget per hour (needs prices)")
	fl.StringVar(&f.pick, "pick", f.pick, "throughput (best goodput for the budget), load-match (fewest GPUs for --request-rate) or autoscale (best prefill and decode engines)")
	fl.Float64Var(&r.RequestRate, "request-rate", 0, "requests/s to serve (load-match, autoscale)")
	fl.IntVar(&r.Concurrency, "concurrency", 0, "concurrent users to serve (load-match, autoscale), instead of --request-rate")
	fl.StringVar(&f.mode, "mode", "", "search only agg or disagg deployments (default: both)")
	fl.IntVar(&r.Top, "top", 10, "candidates to list")
	fl.Float64Var(&r.Confidence, "confidence", 0, "pick deployments whose SLA holds with this probability (0.5-0.99), from the held-out spread of the predictions (0: judge the predictions as they are)")
	fl.BoolVar(&f.explain, "explain", false, "say why the winner wins and why the runners-up lose")
	fl.StringVar(&f.emit, "emit", "", "write the chosen deployment as manifests to stdout instead of the result: k8s or dynamo")
	fl.StringVar(&f.specDraft, "spec-draft", "", "with --emit and --spec-tokens: the EAGLE-3 draft model the workers load (default: the model's own MTP layers)")
	fl.StringVar(&f.driver, "dra-driver", manifest.DriverGPUPlane, "DRA driver the claims select devices of: gpuplane (gpu.gpuplane.io) or nvidia (gpu.nvidia.com)")
	fl.StringVar(&f.name, "name", "", "name prefix of emitted objects (default: from the model)")
	fl.StringVar(&f.ns, "namespace", "", "namespace of emitted objects")
	fl.StringVar(&f.image, "image", "", "container image of emitted workers (default: the backend's public image)")
	fl.StringVar(&f.reportFile, "report", "", "write a self-contained HTML report (Pareto plot and candidates) to this file")
	return cmd
}

// request assembles the search request from the file and the flags; flags
// given explicitly override the file.
func (f *configureFlags) request(g *globals, cmd *cobra.Command) (configure.Request, error) {
	changed := cmd.Flags().Changed
	r := f.req
	if changed("top") && r.Top == 0 {
		// The request's 0 means its default; given on the command line it would list 10 unasked.
		return r, fmt.Errorf("--top: 0 would list no candidate; give 1 or more (default 10)")
	}
	if f.file != "" {
		data, err := strict.ReadFile(f.file)
		if err != nil {
			return r, fmt.Errorf("-f: %w", err)
		}
		rf, err := configure.ParseFile(data)
		if err != nil {
			return r, fmt.Errorf("-f %s: %w", f.file, err)
		}
		for _, n := range rf.Notes {
			g.log.Warn("request file field not used by the search", "file", f.file, "note", n)
		}
		fr := rf.Request
		override := func(name string, apply func()) {
			if changed(name) {
				apply()
			}
		}
		override("model", func() { fr.Model = r.Model })
		override("precision", func() { fr.Precision = r.Precision })
		override("kv-precision", func() { fr.KVPrecision = r.KVPrecision })
		override("backend", func() { fr.Backend = r.Backend })
		override("spec-tokens", func() { fr.SpecTokens = r.SpecTokens })
		override("spec-accept", func() { fr.SpecAccept = r.SpecAccept })
		override("isl", func() { fr.ISL = r.ISL })
		override("osl", func() { fr.OSL = r.OSL })
		override("ttft", func() { fr.SLA.TTFTms = r.SLA.TTFTms })
		override("itl", func() { fr.SLA.ITLms = r.SLA.ITLms })
		override("e2e", func() { fr.SLA.E2Ems = r.SLA.E2Ems })
		override("ttft-percentile", func() { fr.SLA.TTFTPercentile = r.SLA.TTFTPercentile })
		override("itl-percentile", func() { fr.SLA.ITLPercentile = r.SLA.ITLPercentile })
		override("max-gpus", func() { fr.MaxGPUs = r.MaxGPUs })
		override("max-cost", func() { fr.MaxCostPerHour = r.MaxCostPerHour })
		override("request-rate", func() { fr.RequestRate, fr.Concurrency = r.RequestRate, 0 })
		override("concurrency", func() { fr.Concurrency, fr.RequestRate = r.Concurrency, 0 })
		override("pick", func() { fr.Pick = configure.Pick(f.pick) })
		override("confidence", func() { fr.Confidence = r.Confidence })
		fr.Top = r.Top
		r = fr
		if rf.VRAMMiB > 0 {
			env, err := g.env()
			if err != nil {
				return r, err
			}
			if err := rf.CheckHardware(env); err != nil {
				return r, fmt.Errorf("-f %s: %w", f.file, err)
			}
		}
	} else {
		pick, err := configure.ParsePick(f.pick)
		if err != nil {
			return r, fmt.Errorf("--%w", err)
		}
		r.Pick = pick
		if !changed("precision") {
			// A quantised checkpoint's name says its precision; the flag's default must not contradict it.
			env, err := g.env()
			if err != nil {
				return r, err
			}
			if _, _, ok := env.Catalog.QuantizedCheckpoint(r.Model); ok {
				r.Precision = ""
			}
		}
	}
	if f.mode != "" {
		if f.mode != "agg" && f.mode != "disagg" {
			return r, fmt.Errorf("--mode: %q is not agg or disagg", f.mode)
		}
		r.Modes = []string{f.mode}
	}
	hwFlags := changed("gpu") || changed("total-gpus") || changed("gpus-per-node") || changed("price")
	switch {
	case f.fromCluster && (hwFlags || f.poolFile != ""):
		return r, fmt.Errorf("--pool-from-cluster: the cluster is the pool; drop --pool, --gpu and --total-gpus")
	case f.fromCluster:
		pool, gpus, err := g.clusterPool(f)
		if err != nil {
			return r, err
		}
		r.Pool = pool
		if r.MaxGPUs == 0 || r.MaxGPUs > float64(gpus) {
			r.MaxGPUs = float64(gpus)
		}
	case f.poolFile != "" && hwFlags:
		return r, fmt.Errorf("--pool: give a pool file or --gpu/--total-gpus, not both")
	case f.poolFile != "":
		data, err := strict.ReadFile(f.poolFile)
		if err != nil {
			return r, fmt.Errorf("--pool: %w", err)
		}
		pool, err := configure.ParsePool(data)
		if err != nil {
			return r, fmt.Errorf("--pool %s: %w", f.poolFile, err)
		}
		r.Pool = pool
	case f.file == "" || hwFlags:
		if f.totalGPUs < 1 {
			return r, fmt.Errorf("--total-gpus: %d must be >= 1", f.totalGPUs)
		}
		r.Pool = []configure.PoolEntry{{Device: f.gpu, Count: f.totalGPUs, GPUsPerNode: f.gpusPerNode, PricePerHour: f.price}}
		r.DeviceField = "--gpu"
	}
	return r, nil
}

func runConfigure(g *globals, cmd *cobra.Command, f *configureFlags) error {
	if _, m, err := g.envWithModel(f.modelConfig); err != nil {
		return err
	} else if m != nil && !cmd.Flags().Changed("model") {
		f.req.Model = m.Name
	}
	req, err := f.request(g, cmd)
	if err != nil {
		return err
	}
	if f.emit != "" && f.emit != "k8s" && f.emit != "dynamo" {
		return fmt.Errorf("--emit: %q is not k8s or dynamo", f.emit)
	}
	// Flags that shape the emitted manifests or the cluster's pool would
	// be ignored without --emit or --pool-from-cluster.
	for _, fl := range []struct {
		name, needs string
		ok          bool
	}{
		{"name", "--emit", f.emit != ""}, {"namespace", "--emit", f.emit != ""}, {"image", "--emit", f.emit != ""},
		{"dra-driver", "--emit", f.emit != ""},
		{"device-classes", "--pool-from-cluster", f.fromCluster}, {"device-selector", "--pool-from-cluster", f.fromCluster},
		{"kubeconfig", "--pool-from-cluster", f.fromCluster},
	} {
		if cmd.Flags().Changed(fl.name) && !fl.ok {
			return fmt.Errorf("--%s applies with %s only", fl.name, fl.needs)
		}
	}
	if f.specDraft != "" && (f.emit == "" || req.SpecTokens == 0) {
		return fmt.Errorf("--spec-draft %q: names the draft the emitted workers load; give it with --emit and --spec-tokens", f.specDraft)
	}
	// Checked before the search: the API server would refuse them after it.
	if f.name != "" {
		if errs := validation.IsDNS1123Label(f.name); len(errs) > 0 {
			return fmt.Errorf("--name: %q: %s", f.name, strings.Join(errs, "; "))
		}
	}
	if f.ns != "" {
		if errs := validation.IsDNS1123Label(f.ns); len(errs) > 0 {
			return fmt.Errorf("--namespace: %q: %s", f.ns, strings.Join(errs, "; "))
		}
	}
	env, err := g.env()
	if err != nil {
		return err
	}
	var done atomic.Int64
	var once sync.Once
	stop := func() {}
	opt := configure.Options{Progress: func(d, total int) {
		once.Do(func() { stop = progress(g.stderr, "configure: engines profiled", total, &done) })
		done.Add(1)
	}}
	res, err := configure.Search(env, req, opt)
	stop()
	if err != nil {
		return err
	}
	g.log.Debug("configure done", "candidates", res.CandidatesEvaluated, "simulations", res.Simulations)
	if f.reportFile != "" {
		if err := writeFile(f.reportFile, func(w *bytes.Buffer) error { return report.WriteConfigure(w, res) }); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
	}
	if f.emit != "" {
		return emitManifests(g, f, req, res)
	}
	format, _ := g.format()
	if format != output.Table {
		err = output.Write(g.stdout, format, res)
	} else {
		err = writeConfigureTable(g, res, f.explain)
	}
	if err == nil && res.Unreachable != nil {
		// The closest candidates are printed, but a script must not take them for an answer.
		return errors.New(res.Unreachable.Message)
	}
	return err
}

func writeConfigureTable(g *globals, res *configure.Result, explain bool) error {
	w := g.stdout
	fmt.Fprintf(w, "%s on %s, %s, ISL %d / OSL %d, TTFT %s, ITL %s", res.Model, res.Backend, res.Precision, res.ISL, res.OSL,
		slo.Target(res.SLA.TTFTPercentile, res.SLA.TTFTms), slo.Target(res.SLA.ITLPercentile, res.SLA.ITLms))
	if res.SLA.E2Ems > 0 {
		fmt.Fprintf(w, ", E2E <= %g ms", res.SLA.E2Ems)
	}
	fmt.Fprintf(w, "; pick %s\n", res.Pick)
	if res.SpecTokens > 0 {
		fmt.Fprintf(w, "speculative decoding: %d drafted, %g gained a step (every candidate priced with it)\n", res.SpecTokens, res.SpecAccept)
	}
	if c := res.SLAAtConfidence; c != nil {
		fmt.Fprintf(w, "confidence %g: predictions held to TTFT <= %.0f ms, ITL <= %.1f ms (the held-out spread of such runs)\n", res.Confidence, c.TTFTms, c.ITLms)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if res.Unreachable != nil {
		fmt.Fprintf(w, "UNREACHABLE: %s\n", res.Unreachable.Message)
	}
	if b := res.Best; b != nil {
		fmt.Fprintf(w, "best: %s, %.0f tokens/s (%.0f per GPU, %.1f per user), TTFT %s %.0f ms (p99 %.0f), ITL %s %.1f ms, %d users\n",
			configure.Describe(*b), b.TokensPerS, b.TokensPerSPerGPU, b.TokensPerSPerUser, slo.Stat(res.SLA.TTFTPercentile), b.TTFTms,
			b.TTFTP99ms, slo.Stat(res.SLA.ITLPercentile), b.ITLms, b.Concurrency)
	}
	if e := res.Engines; e != nil {
		fmt.Fprintf(w, "autoscale units: prefill %s tp%d (%.2f req/s each), decode %s tp%d (%.2f req/s each)\n",
			e.Prefill.Device, e.Prefill.TP, e.Prefill.CapacityRPS, e.Decode.Device, e.Decode.TP, e.Decode.CapacityRPS)
	}
	fmt.Fprintln(w)
	if err := output.WriteTable(w, configureTable{res: res}); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d candidates evaluated (%d engine simulations), %d Pareto points\n", res.CandidatesEvaluated, res.Simulations, len(res.Pareto))
	if explain {
		fmt.Fprintln(w, "\nwhy:")
		for _, l := range res.Explain {
			fmt.Fprintf(w, "  - %s\n", l)
		}
		for _, r := range res.Rejected {
			fmt.Fprintf(w, "  - rejected %s %s: %s\n", r.Role, r.Engine, r.Reason)
		}
	}
	return nil
}

func emitManifests(g *globals, f *configureFlags, req configure.Request, res *configure.Result) error {
	if res.Best == nil {
		return fmt.Errorf("--emit: no deployment to write")
	}
	if !res.Best.MeetsSLO {
		return fmt.Errorf("--emit: the best deployment misses the SLO (%s); relax the SLO or change the pool before deploying", res.Unreachable.Message)
	}
	env, err := g.env()
	if err != nil {
		return err
	}
	o := manifest.Options{Name: f.name, Namespace: f.ns, Driver: f.driver, Image: f.image, Model: res.Checkpoint,
		Backend: res.Backend, Catalog: env.Catalog}
	if req.SpecTokens > 0 {
		o.Spec = &manifest.Speculative{Tokens: req.SpecTokens, Accept: req.SpecAccept, Draft: f.specDraft}
	}
	if o.Quantization, o.KVCache, err = manifest.Precisions(env.Catalog, res.Checkpoint, res.Precision); err != nil {
		return fmt.Errorf("--emit: %w", err)
	}
	var out []byte
	if f.emit == "dynamo" {
		out, err = manifest.Dynamo(*res.Best, o)
	} else {
		out, err = manifest.Kubernetes(*res.Best, o)
	}
	if err != nil {
		return fmt.Errorf("--emit %s: %w", f.emit, err)
	}
	fmt.Fprintf(g.stderr, "chosen: %s (%s)\n", configure.Describe(*res.Best), strings.TrimSpace(res.Best.Why))
	if req.SpecTokens > 0 && f.specDraft == "" {
		g.log.Warn("the decoding workers draft with the model's own MTP layers; a model without them needs --spec-draft (an EAGLE-3 draft)",
			"model", res.Checkpoint, "spec_tokens", req.SpecTokens)
	}
	_, err = g.stdout.Write(out)
	return err
}

// writeFile renders into memory first so a failed render leaves no partial file.
func writeFile(path string, render func(*bytes.Buffer) error) error {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
