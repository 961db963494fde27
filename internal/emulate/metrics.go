package emulate

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are vLLM's, with its names, labels and buckets, so dashboards,
// autoscalers and gpuplane's planner read an emulator as they read vLLM.
type Metrics struct {
	ttft, itl, e2e            prometheus.Observer
	prompt, generation        prometheus.Counter
	successLength, successStp prometheus.Counter
}

// NewMetrics registers the metrics for model on reg; stats reads the
// engine's running and waiting requests and KV-cache use.
func NewMetrics(reg prometheus.Registerer, model string, stats func() (running, waiting int, kv float64)) (*Metrics, error) {
	labels := prometheus.Labels{"model_name": model, "engine": "0"}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels}, nil)
	}
	ttft := hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
		[]float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560})
	itl := hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
		[]float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80})
	e2e := hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
		[]float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680})
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
	}
	prompt := counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.")
	gen := counter("vllm:generation_tokens_total", "Number of generation tokens processed.")
	success := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
		Help: "Count of successfully processed requests.", ConstLabels: labels}, []string{"finished_reason"})
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f)
	}
	for _, c := range []prometheus.Collector{ttft, itl, e2e, prompt, gen, success,
		gauge("vllm:num_requests_running", "Number of requests in model execution batches.", func() float64 { r, _, _ := stats(); return float64(r) }),
		gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", func() float64 { _, w, _ := stats(); return float64(w) }),
		gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", func() float64 { _, _, kv := stats(); return kv }),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return &Metrics{ttft: ttft.WithLabelValues(), itl: itl.WithLabelValues(), e2e: e2e.WithLabelValues(), prompt: prompt, generation: gen,
		successLength: success.WithLabelValues("length"), successStp: success.WithLabelValues("stop")}, nil
}

// FirstToken records a time to first token and the prompt's tokens.
func (m *Metrics) FirstToken(isl int, ttft time.Duration) {
	m.ttft.Observe(ttft.Seconds())
	m.prompt.Add(float64(isl))
}

// Token records one inter-token latency.
func (m *Metrics) Token(itl time.Duration) { m.itl.Observe(itl.Seconds()) }

// Finished records a completed request.
func (m *Metrics) Finished(_, osl int, e2e time.Duration, reason string) {
	m.e2e.Observe(e2e.Seconds())
	m.generation.Add(float64(osl))
	if reason == "stop" {
		m.successStp.Inc()
	} else {
		m.successLength.Inc()
	}
}
