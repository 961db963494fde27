package plannerlive

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

const good = `planner: {ttftMs: 500, itlMs: 30}
engine: {model: Qwen/Qwen3-32B, gpu: h100_sxm, precision: fp8, prefillTp: 1, decodeTp: 4}
metrics: {scrape: {prefill: ["http://127.0.0.1:8000/metrics"], decode: ["http://127.0.0.1:8001/metrics"]}}
targets:
  prefill: {group: apps, version: v1, resource: deployments, namespace: llm, name: p}
  decode: {group: apps, version: v1, resource: deployments, namespace: llm, name: d}
`

func TestConfig(t *testing.T) {
	c, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Build(estimate.Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()})
	if err != nil {
		t.Fatal(err)
	}
	if p.Config().DecodeGPUs != 4 || c.Listen != "127.0.0.1:9464" { // loopback by default
		t.Errorf("decode GPUs %d listen %q", p.Config().DecodeGPUs, c.Listen)
	}
	cases := map[string]string{
		"unknown field": strings.Replace(good, "dryRun", "dry", 1) + "speed: 2\n",
		"two sources":   strings.Replace(good, "metrics: {", "metrics: {prometheus: {url: x, prefillSelector: a, decodeSelector: b}, ", 1),
		"no target":     strings.Replace(good, "name: d}", "name: \"\"}", 1),
		"no engine":     strings.Replace(good, "gpu: h100_sxm, ", "", 1),
		"urls and pods": strings.Replace(good, "scrape: {", "scrape: {prefillSelector: role=prefill, ", 1),
		"pods half":     strings.Replace(good, `scrape: {prefill: ["http://127.0.0.1:8000/metrics"], decode: ["http://127.0.0.1:8001/metrics"]}`, "scrape: {prefillSelector: role=prefill, namespace: s}", 1),
		"scrape url":    strings.Replace(good, `"http://127.0.0.1:8001/metrics"`, `"127.0.0.1:8001/metrics"`, 1),
		"prom url":      strings.Replace(good, `scrape: {prefill: ["http://127.0.0.1:8000/metrics"], decode: ["http://127.0.0.1:8001/metrics"]}`, "prometheus: {url: prometheus:9090, prefillSelector: a, decodeSelector: b}", 1),
		"pods port":     strings.Replace(good, `scrape: {prefill: ["http://127.0.0.1:8000/metrics"], decode: ["http://127.0.0.1:8001/metrics"]}`, "scrape: {namespace: s, prefillSelector: a, decodeSelector: b, port: 70000}", 1),
		"listen":        good + "listen: \"9464\"\n",
		"listen port":   good + "listen: \"0.0.0.0:99999\"\n",
		"one target":    strings.Replace(good, "name: d}", "name: p}", 1),
		"one url":       strings.Replace(good, `"http://127.0.0.1:8001/metrics"`, `"http://127.0.0.1:8000/metrics"`, 1),
		"one selector":  strings.Replace(good, `scrape: {prefill: ["http://127.0.0.1:8000/metrics"], decode: ["http://127.0.0.1:8001/metrics"]}`, "prometheus: {url: \"http://p:9090\", prefillSelector: a, decodeSelector: a}", 1),
		"one pod label": strings.Replace(good, `scrape: {prefill: ["http://127.0.0.1:8000/metrics"], decode: ["http://127.0.0.1:8001/metrics"]}`, "scrape: {namespace: s, prefillSelector: role=x, decodeSelector: role=x}", 1),
		"pods selector": strings.Replace(good, `scrape: {prefill: ["http://127.0.0.1:8000/metrics"], decode: ["http://127.0.0.1:8001/metrics"]}`, "scrape: {namespace: s, prefillSelector: role=prefill, decodeSelector: \"a=(\"}", 1),
	}
	wants := map[string]string{"unknown field": "speed", "two sources": "exactly one", "no target": "targets.decode", "no engine": "engine.model",
		"urls and pods": "not both or neither", "pods half": "needs decodeSelector", "scrape url": `metrics.scrape.decode[0]: "127.0.0.1:8001/metrics" is not an http(s) URL`,
		"prom url": "metrics.prometheus.url", "pods port": "metrics.scrape.port: 70000", "listen": `listen: "9464"`,
		"listen port": `listen: "0.0.0.0:99999": port "99999", want 0 to 65535`, "pods selector": `metrics.scrape.decodeSelector: "a=(":`,
		"one target": "is targets.prefill too", "one url": `metrics.scrape.decode[0]: "http://127.0.0.1:8000/metrics" is in metrics.scrape.prefill too`,
		"one selector": `prefillSelector and decodeSelector are both "a"`, "one pod label": `metrics.scrape: prefillSelector and decodeSelector are both "role=x"`}
	// Workers found by label: the source gets its client only then.
	pods := strings.Replace(good, `scrape: {prefill: ["http://127.0.0.1:8000/metrics"], decode: ["http://127.0.0.1:8001/metrics"]}`,
		"scrape: {namespace: s, prefillSelector: role=prefill, decodeSelector: role=decode}", 1)
	pc, err := ParseConfig([]byte(pods))
	if err != nil {
		t.Fatal(err)
	}
	asked := false
	src, err := pc.Source(30, func() (kubernetes.Interface, error) { asked = true; return fake.NewClientset(), nil })
	if err != nil || !asked || src.(*ScrapeSource).PrefillTargets == nil {
		t.Errorf("pod scrape source: %+v %v (client asked: %v)", src, err, asked)
	}
	for name, doc := range cases {
		if _, err := ParseConfig([]byte(doc)); err == nil || !strings.Contains(err.Error(), wants[name]) {
			t.Errorf("%s: error %v, want it to mention %q", name, err, wants[name])
		}
	}
}

// Attention-DP pools: a replica of dp ranks counts its tp x dp GPUs
// against the budget, and a rank layout the model cannot take names the
// pool.
func TestConfigAttentionDP(t *testing.T) {
	env := estimate.Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()}
	doc := strings.Replace(good, "engine: {model: Qwen/Qwen3-32B, gpu: h100_sxm, precision: fp8, prefillTp: 1, decodeTp: 4}",
		"engine: {model: deepseek-ai/DeepSeek-R1, gpu: b200_sxm, precision: fp4, backend: sglang, prefillTp: 1, prefillEp: 4, prefillDp: 4, decodeTp: 1, decodeEp: 8, decodeDp: 8}", 1)
	c, err := ParseConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Build(env)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Config(); got.PrefillGPUs != 4 || got.DecodeGPUs != 8 || got.PrefillRanks != 4 {
		t.Errorf("a replica: prefill %d GPUs in %d ranks, decode %d GPUs; want 4 in 4 and 8", got.PrefillGPUs, got.PrefillRanks, got.DecodeGPUs)
	}
	bad, err := ParseConfig([]byte(strings.Replace(doc, "decodeEp: 8", "decodeEp: 7", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Build(env); err == nil || !strings.Contains(err.Error(), "engine.decode") || !strings.Contains(err.Error(), "ep: 7") {
		t.Errorf("decode ep 7 of dp 8: got %v, want an error naming engine.decode and ep: 7", err)
	}
}

// The decode pool's speculative decoding reaches the capacity model; a
// half-given setting is refused by name.
func TestConfigSpeculativeDecode(t *testing.T) {
	env := estimate.Env{Catalog: catalog.MustDefault(), Params: perf.MustDefaultParams()}
	doc := strings.Replace(good, "decodeTp: 4}", "decodeTp: 4, specTokens: 3, specAccept: 2.5}", 1)
	c, err := ParseConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Build(env); err != nil {
		t.Fatal(err)
	}
	half, err := ParseConfig([]byte(strings.Replace(good, "decodeTp: 4}", "decodeTp: 4, specTokens: 3}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := half.Build(env); err == nil || !strings.Contains(err.Error(), "engine.specTokens/specAccept: spec_accept: required") {
		t.Errorf("specTokens without specAccept: %v", err)
	}
}
