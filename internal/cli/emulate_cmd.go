package cli

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/emulate"
	"github.com/gpuplane/gpuplane/internal/estimate"
)

func newEmulateCmd(g *globals) *cobra.Command {
	q := estimate.Defaults()
	var cfg emulate.Config
	var host string
	var port int
	var grace time.Duration
	var maxInFlight int
	cmd := &cobra.Command{
		Use:   "emulate",
		Short: "An OpenAI-compatible inference worker without a GPU, timed by the performance model in real time",
		Long: `Serves one model on one virtual device like vLLM would: /v1/completions and /v1/chat/completions
(streaming or not), /v1/models, /health and vLLM's /metrics. Each request goes through the simulator's
engine loop run against the wall clock (continuous batching, chunked prefill, KV-cache admission,
queueing), so TTFT, inter-token latency and throughput are what the performance model predicts for
the device. Tokens are counted as one per four characters; without ignore_eos a response ends
between half of max_tokens and max_tokens, the same for the same prompt.

  gpuplane emulate --model Qwen/Qwen3-32B-FP8 --gpu h100_sxm --port 8000
  gpuplane emulate --model Qwen/Qwen3-8B --gpu a10 --slice 1/2 --role decode`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := g.env()
			if err != nil {
				return err
			}
			if err := checkServeFlags(port, maxInFlight); err != nil {
				return err
			}
			if grace < 0 {
				return fmt.Errorf("--shutdown-grace: %v must be >= 0 (0: stop at once, dropping requests in flight)", grace)
			}
			// perf names estimate's flags; these are vLLM's spellings.
			if q.MaxSeqs < 0 {
				return fmt.Errorf("--max-num-seqs: %d must be >= 1 (0: the backend's default)", q.MaxSeqs)
			}
			if q.MaxBatchedTokens < 0 {
				return fmt.Errorf("--max-num-batched-tokens: %d must be >= 1 (0: the backend's default)", q.MaxBatchedTokens)
			}
			precisionFollowsModel(cmd.Flags(), false, &q)
			cfg.Query = q
			reg := prometheus.NewRegistry()
			srv, err := emulate.New(env, cfg, reg, time.Now)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
			if err != nil {
				return fmt.Errorf("--host/--port: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go srv.RT.Run(ctx)
			g.log.Info("emulated worker serving", "addr", ln.Addr().String(), "model", srv.Model, "role", cfg.Role,
				"maxModelLen", srv.MaxModelLen, "kvTokens", srv.RT.KVTokens())
			fmt.Fprintf(g.stderr, "serving %s on http://%s (role %s, KV cache %d tokens)\n", srv.Model, ln.Addr(), roleName(cfg.Role), srv.RT.KVTokens())
			// Requests in flight finish first (up to the grace period), as vLLM drains.
			return serve(ctx, ln, srv.Handler(), grace, maxInFlight)
		},
	}
	f := cmd.Flags()
	addWorkerFlags(f, &q)
	f.IntVar(&q.EP, "ep", 0, "expert parallelism (MoE models; must divide tp x dp)")
	f.IntVar(&q.DP, "dp", 0, "attention-DP ranks of the worker, tp GPUs each, stepping together (vLLM's --data-parallel-size)")
	f.IntVar(&q.MaxSeqs, "max-num-seqs", 0, "most sequences in a batch of one rank (vLLM's --max-num-seqs; default: the backend's)")
	f.IntVar(&q.MaxBatchedTokens, "max-num-batched-tokens", 0, "token budget of one iteration (default: the backend's)")
	f.StringVar(&cfg.Role, "role", "agg", "agg, prefill or decode")
	f.StringVar(&cfg.ServedName, "served-model-name", "", "model name clients send (default: --model)")
	f.IntVar(&cfg.MaxModelLen, "max-model-len", 0, "longest prompt + output in tokens (default: the model's context length, or the KV cache's capacity when smaller)")
	f.IntVar(&cfg.DefaultMaxTokens, "default-max-tokens", 256, "max_tokens of chat requests that give none (0: 256)")
	f.StringVar(&host, "host", "127.0.0.1", "address to listen on")
	f.IntVar(&port, "port", 8000, "port to listen on (0: any free port)")
	f.DurationVar(&grace, "shutdown-grace", 60*time.Second, "on SIGTERM, how long requests in flight may take to finish")
	f.IntVar(&maxInFlight, "max-concurrent-requests", 4096, "requests served at once; more are answered 429 (0: no limit)")
	return cmd
}

func roleName(r string) string {
	if r == "" {
		return "agg"
	}
	return r
}
