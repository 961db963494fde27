package plannerlive

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuplane/gpuplane/internal/capacity"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/listenaddr"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/planner"
	"github.com/gpuplane/gpuplane/internal/strict"
	"github.com/gpuplane/gpuplane/internal/workers"
)

// Config is `gpuplane planner run --config`'s file.
type Config struct {
	Planner planner.Config `json:"planner"`
	// Engine is what the pools run, for the capacity model.
	Engine struct {
		Model     string `json:"model"`
		GPU       string `json:"gpu"`
		Precision string `json:"precision,omitempty"`
		Backend   string `json:"backend,omitempty"`
		PrefillTP int    `json:"prefillTp,omitempty"`
		DecodeTP  int    `json:"decodeTp,omitempty"`
		// EP and DP shape MoE workers as estimate's --ep and --dp do: a
		// worker of dp attention-DP ranks holds tp x dp GPUs.
		PrefillEP int `json:"prefillEp,omitempty"`
		DecodeEP  int `json:"decodeEp,omitempty"`
		PrefillDP int `json:"prefillDp,omitempty"`
		DecodeDP  int `json:"decodeDp,omitempty"`
		// SpecTokens and SpecAccept: the decode workers' speculative
		// decoding (drafted tokens a step, mean tokens gained a step).
		SpecTokens int     `json:"specTokens,omitempty"`
		SpecAccept float64 `json:"specAccept,omitempty"`
	} `json:"engine"`
	Metrics struct {
		// Engine is whose metric names to read: vllm (default) or sglang.
		Engine     string `json:"engine,omitempty"`
		Prometheus *struct {
			URL             string `json:"url"`
			PrefillSelector string `json:"prefillSelector"`
			DecodeSelector  string `json:"decodeSelector"`
		} `json:"prometheus,omitempty"`
		Scrape *struct {
			// Prefill and Decode are metrics URLs; or the workers are the
			// Running, Ready pods of the selectors in Namespace, at Port.
			Prefill         []string `json:"prefill,omitempty"`
			Decode          []string `json:"decode,omitempty"`
			Namespace       string   `json:"namespace,omitempty"`
			PrefillSelector string   `json:"prefillSelector,omitempty"`
			DecodeSelector  string   `json:"decodeSelector,omitempty"`
			Port            int      `json:"port,omitempty"`
		} `json:"scrape,omitempty"`
	} `json:"metrics"`
	Targets struct {
		Prefill Target `json:"prefill"`
		Decode  Target `json:"decode"`
	} `json:"targets"`
	DryRun bool   `json:"dryRun,omitempty"`
	Listen string `json:"listen,omitempty"`
}

// ParseConfig reads and checks a planner run file.
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	if err := strict.Unmarshal(bytes.TrimSpace(data), &c); err != nil {
		return nil, fmt.Errorf("planner config: %w (fields: planner, engine, metrics, targets, dryRun, listen)", err)
	}
	m := c.Metrics
	switch {
	case c.Engine.Model == "" || c.Engine.GPU == "":
		return nil, fmt.Errorf("engine.model and engine.gpu: required (the capacity model sizes the pools from them)")
	case (m.Prometheus == nil) == (m.Scrape == nil):
		return nil, fmt.Errorf("metrics: give exactly one of prometheus or scrape")
	case m.Prometheus != nil && (m.Prometheus.URL == "" || m.Prometheus.PrefillSelector == "" || m.Prometheus.DecodeSelector == ""):
		return nil, fmt.Errorf("metrics.prometheus: url, prefillSelector and decodeSelector are required")
	case m.Scrape != nil && (len(m.Scrape.Prefill) > 0 || len(m.Scrape.Decode) > 0) == (m.Scrape.PrefillSelector != "" || m.Scrape.DecodeSelector != ""):
		return nil, fmt.Errorf("metrics.scrape: give prefill and decode metrics URLs, or prefillSelector and decodeSelector (pods), not both or neither")
	case m.Scrape != nil && m.Scrape.PrefillSelector == "" && (len(m.Scrape.Prefill) == 0 || len(m.Scrape.Decode) == 0):
		return nil, fmt.Errorf("metrics.scrape: prefill and decode need at least one metrics URL each")
	case m.Scrape != nil && m.Scrape.PrefillSelector != "" && (m.Scrape.DecodeSelector == "" || m.Scrape.Namespace == ""):
		return nil, fmt.Errorf("metrics.scrape: prefillSelector needs decodeSelector and namespace (port defaults to 8000)")
	}
	if _, err := ParseDialect(m.Engine); err != nil {
		return nil, err
	}
	if err := checkEndpoints(&c); err != nil {
		return nil, err
	}
	for _, t := range []struct {
		name string
		Target
	}{{"prefill", c.Targets.Prefill}, {"decode", c.Targets.Decode}} {
		if t.Version == "" || t.Resource == "" || t.Namespace == "" || t.Name == "" {
			return nil, fmt.Errorf("targets.%s: version, resource, namespace and name are required (e.g. group: apps, version: v1, resource: deployments)", t.name)
		}
	}
	if err := checkPoolsApart(&c); err != nil {
		return nil, err
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:9464" // loopback unless the file says wider (":9464" in a pod)
	}
	return &c, nil
}

// checkPoolsApart refuses a file that gives both pools the same object to
// scale or the same workers to read: the pools would fight over one
// replica count, or each would see the other's load as its own.
func checkPoolsApart(c *Config) error {
	p, d := c.Targets.Prefill, c.Targets.Decode
	if p.Group == d.Group && p.Resource == d.Resource && p.Namespace == d.Namespace && p.Name == d.Name {
		return fmt.Errorf("targets.decode: %s is targets.prefill too; each pool scales its own object", d)
	}
	m := c.Metrics
	switch {
	case m.Prometheus != nil && m.Prometheus.PrefillSelector == m.Prometheus.DecodeSelector:
		return fmt.Errorf("metrics.prometheus: prefillSelector and decodeSelector are both %q; each selects its own pool's workers", m.Prometheus.PrefillSelector)
	case m.Scrape != nil && m.Scrape.PrefillSelector != "" && m.Scrape.PrefillSelector == m.Scrape.DecodeSelector:
		return fmt.Errorf("metrics.scrape: prefillSelector and decodeSelector are both %q; each selects its own pool's pods", m.Scrape.PrefillSelector)
	}
	if m.Scrape != nil {
		for i, u := range m.Scrape.Decode {
			if slices.Contains(m.Scrape.Prefill, u) {
				return fmt.Errorf("metrics.scrape.decode[%d]: %q is in metrics.scrape.prefill too; each URL is one pool's worker", i, u)
			}
		}
	}
	return nil
}

// checkEndpoints refuses a metrics URL, port or listen address that no
// tick could use: each would otherwise fail at every tick while the
// planner holds.
func checkEndpoints(c *Config) error {
	m := c.Metrics
	if m.Prometheus != nil {
		if err := checkURL("metrics.prometheus.url", m.Prometheus.URL, "http://prometheus.monitoring:9090"); err != nil {
			return err
		}
	}
	if s := m.Scrape; s != nil {
		for _, pool := range []struct {
			name string
			urls []string
		}{{"prefill", s.Prefill}, {"decode", s.Decode}} {
			for i, u := range pool.urls {
				if err := checkURL(fmt.Sprintf("metrics.scrape.%s[%d]", pool.name, i), u, "http://10.1.2.3:8000/metrics"); err != nil {
					return err
				}
			}
		}
		if s.Port < 0 || s.Port > 65535 {
			return fmt.Errorf("metrics.scrape.port: %d, want 1 to 65535 (0: 8000)", s.Port)
		}
		for _, sel := range []struct{ field, sel string }{{"metrics.scrape.prefillSelector", s.PrefillSelector}, {"metrics.scrape.decodeSelector", s.DecodeSelector}} {
			if sel.sel == "" {
				continue
			}
			if err := workers.CheckSelector(sel.field, sel.sel); err != nil {
				return err
			}
		}
	}
	if c.Listen != "" {
		if err := listenaddr.Check("listen", c.Listen, `127.0.0.1:9464 (":9464" in a pod)`); err != nil {
			return err
		}
	}
	return nil
}

// checkURL refuses a URL no tick could use; eg is one the field takes.
func checkURL(field, raw, eg string) error {
	if !workers.IsHTTPURL(raw) {
		return fmt.Errorf("%s: %q is not an http(s) URL; e.g. %s", field, raw, eg)
	}
	return nil
}

// Build makes the planner on the performance model of the configured engines.
func (c *Config) Build(env estimate.Env) (*planner.Planner, error) {
	e := c.Engine
	if e.Backend == "" {
		e.Backend = "vllm"
	}
	base, err := estimate.BaseConfig(env, estimate.Query{Model: e.Model, GPU: e.GPU, Precision: e.Precision, Backend: e.Backend})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if err := perf.CheckSpec(e.SpecTokens, e.SpecAccept); err != nil {
		return nil, fmt.Errorf("engine.specTokens/specAccept: %w", err)
	}
	pc, dc := base, base
	dc.SpecTokens, dc.SpecAccept = e.SpecTokens, e.SpecAccept
	pc.TP, dc.TP = max(e.PrefillTP, 1), max(e.DecodeTP, 1)
	pc.EP, dc.EP, pc.DP, dc.DP = e.PrefillEP, e.DecodeEP, e.PrefillDP, e.DecodeDP
	pw, err := perf.NewWorker(pc, env.Params)
	if err != nil {
		return nil, fmt.Errorf("engine.prefill (tp, ep, dp): %w", err)
	}
	dw, err := perf.NewWorker(dc, env.Params)
	if err != nil {
		return nil, fmt.Errorf("engine.decode (tp, ep, dp): %w", err)
	}
	model, err := capacity.New(pw, dw, true)
	if err != nil {
		return nil, err
	}
	pcfg := c.Planner
	if pcfg.PrefillGPUs == 0 {
		c := pw.Config()
		pcfg.PrefillGPUs = c.WorkerGPUs()
	}
	if pcfg.DecodeGPUs == 0 {
		c := dw.Config()
		pcfg.DecodeGPUs = c.WorkerGPUs()
	}
	if pcfg.PrefillRanks == 0 {
		pcfg.PrefillRanks = pw.Config().DP
	}
	return planner.New(pcfg, model)
}

// Source builds the configured metrics source.
// pods, when the workers are found by label, makes the targets with a
// client from newClient.
func (c *Config) Source(interval float64, newClient func() (kubernetes.Interface, error)) (MetricsSource, error) {
	d, err := ParseDialect(c.Metrics.Engine)
	if err != nil {
		return nil, err
	}
	if p := c.Metrics.Prometheus; p != nil {
		src, err := NewPromSource(p.URL, p.PrefillSelector, p.DecodeSelector, time.Duration(interval*float64(time.Second)), d)
		if err != nil {
			return nil, err
		}
		src.TTFTPercentile, src.ITLPercentile = c.Planner.TTFTPercentile, c.Planner.ITLPercentile
		return src, nil
	}
	s := c.Metrics.Scrape
	src := &ScrapeSource{Prefill: s.Prefill, Decode: s.Decode, Dialect: d,
		TTFTPercentile: c.Planner.TTFTPercentile, ITLPercentile: c.Planner.ITLPercentile}
	if s.PrefillSelector != "" {
		client, err := newClient()
		if err != nil {
			return nil, err
		}
		port := s.Port
		if port == 0 {
			port = 8000
		}
		src.PrefillTargets = workers.Pods{Client: client, Namespace: s.Namespace, Selector: s.PrefillSelector, Port: port}
		src.DecodeTargets = workers.Pods{Client: client, Namespace: s.Namespace, Selector: s.DecodeSelector, Port: port}
	}
	return src, nil
}
