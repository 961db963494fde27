// Package configure searches deployments of a model — aggregated or
// disaggregated, over the device kinds a cluster has, whole GPUs and slices —
// for the one with the highest goodput under a TTFT/ITL SLO. Engines are
// profiled on the performance model one role at a time, combined by rate
// matching, and the finalists are re-run as whole deployments, so every
// reported number is what `gpuplane estimate` would say of that deployment.
// It is pure: no I/O, no clock.
package configure

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
	"github.com/gpuplane/gpuplane/internal/slo"
)

// Pick is what the search optimises.
type Pick string

// Pick modes.
const (
	// Throughput: the highest goodput the budget buys.
	Throughput Pick = "throughput"
	// LoadMatch: the fewest GPUs (or least cost) that serve a request rate within the SLO.
	LoadMatch Pick = "load-match"
	// Autoscale: the best prefill engine and the best decode engine on
	// their own, the units a planner scales.
	Autoscale Pick = "autoscale"
)

// ParsePick validates a pick mode.
func ParsePick(s string) (Pick, error) {
	switch p := Pick(strings.ToLower(strings.TrimSpace(s))); p {
	case Throughput, LoadMatch, Autoscale:
		return p, nil
	case "":
		return Throughput, nil
	}
	return "", fmt.Errorf("pick: %q is not throughput, load-match or autoscale", s)
}

// Bounds of a search: past them a request is a mistake.
const (
	MaxRequestRate = 1_000_000  // req/s
	MaxConcurrency = 10_000_000 // users
	MaxPoolDevices = 1_000_000  // devices of one kind
	MaxGPUsPerNode = 1024       // devices of one node or NVLink domain
)

// SLA is the latency target in milliseconds; zero means no limit. A
// percentile (e.g. 90 or 99) judges that percentile of the requests' TTFT
// or ITL; zero judges the mean.
type SLA struct {
	TTFTms         float64 `json:"ttft"`
	ITLms          float64 `json:"itl"`
	E2Ems          float64 `json:"e2e,omitempty"`
	TTFTPercentile float64 `json:"ttftPercentile,omitempty"`
	ITLPercentile  float64 `json:"itlPercentile,omitempty"`
}

// PoolEntry is one kind of device a cluster offers.
type PoolEntry struct {
	// Device is a catalog device: "h100_sxm", "h100_sxm:1g.10gb", "a10:1/2".
	Device string `json:"device"`
	Count  int    `json:"count"`
	// PricePerHour is the price of one device for an hour (any currency).
	PricePerHour float64 `json:"pricePerHour,omitempty"`
	// GPUsPerNode bounds tensor parallelism (default: the GPU's NVLink domain).
	GPUsPerNode int `json:"gpusPerNode,omitempty"`
}

// Request is one search.
type Request struct {
	Model       string `json:"model"`
	Precision   string `json:"precision,omitempty"`
	KVPrecision string `json:"kvPrecision,omitempty"`
	Backend     string `json:"backend,omitempty"`
	// SpecTokens and SpecAccept price every candidate with speculative
	// decoding (perf.Config): drafted tokens a step, mean tokens gained.
	SpecTokens int     `json:"specTokens,omitempty"`
	SpecAccept float64 `json:"specAccept,omitempty"`
	ISL        int     `json:"isl"`
	OSL        int     `json:"osl"`
	// RequestRate (req/s) or Concurrency (users) is the load to serve in load-match mode.
	RequestRate float64     `json:"requestRate,omitempty"`
	Concurrency int         `json:"concurrency,omitempty"`
	SLA         SLA         `json:"sla"`
	Pool        []PoolEntry `json:"pool"`
	// MaxGPUs (physical GPUs the devices occupy, see Config.GPUs) and
	// MaxCostPerHour bound the deployment; zero means the pool is the bound.
	MaxGPUs        float64 `json:"maxGpus,omitempty"`
	MaxCostPerHour float64 `json:"maxCostPerHour,omitempty"`
	Pick           Pick    `json:"pick,omitempty"`
	// Modes limits the search to "agg" or "disagg"; empty searches both.
	Modes []string `json:"modes,omitempty"`
	// Top is how many ranked candidates the result lists (default 10).
	Top int `json:"top,omitempty"`
	// Confidence (0.5-0.99, 0: none) asks for deployments whose SLA holds
	// with that probability, from the parameters' held-out intervals.
	Confidence float64 `json:"confidence,omitempty"`
	// DeviceField is where the user named a one-kind pool's device (a flag
	// or a request file's field), so that an unknown device is reported
	// there rather than as pool[0].device.
	DeviceField string `json:"-"`
}

// Validate checks the request and names the field to fix.
func (r *Request) Validate() error {
	if err := perf.CheckSpec(r.SpecTokens, r.SpecAccept); err != nil {
		return err
	}
	switch {
	case r.Model == "":
		return fmt.Errorf("model: required (see: gpuplane catalog models)")
	case r.ISL < 1:
		return fmt.Errorf("isl: %d must be >= 1", r.ISL)
	case r.OSL < 2:
		return fmt.Errorf("osl: %d must be >= 2 (ITL needs a second token)", r.OSL)
	case !(r.SLA.TTFTms >= 0 && r.SLA.ITLms >= 0 && r.SLA.E2Ems >= 0) || math.IsInf(r.SLA.TTFTms+r.SLA.ITLms+r.SLA.E2Ems, 0):
		return fmt.Errorf("sla: ttft %g, itl %g and e2e %g must be finite and >= 0 ms (0 means no limit)", r.SLA.TTFTms, r.SLA.ITLms, r.SLA.E2Ems)
	case r.SLA.TTFTms == 0 && r.SLA.ITLms == 0 && r.SLA.E2Ems == 0:
		return fmt.Errorf("sla: give at least one of ttft, itl or e2e (ms)")
	case len(r.Pool) == 0:
		return fmt.Errorf("pool: no devices; give --gpu and --total-gpus, or a pool file")
	case !(r.RequestRate >= 0 && r.RequestRate <= MaxRequestRate):
		return fmt.Errorf("requestRate: %g must be 0 to %g req/s", r.RequestRate, float64(MaxRequestRate))
	case r.Concurrency < 0 || r.Concurrency > MaxConcurrency:
		return fmt.Errorf("concurrency: %d must be 0 to %d users", r.Concurrency, MaxConcurrency)
	case r.ISL > estimate.MaxTokens || r.OSL > estimate.MaxTokens: // a request's bound, as estimate's
		return fmt.Errorf("isl %d and osl %d: at most %d tokens", r.ISL, r.OSL, estimate.MaxTokens)
	case r.RequestRate > 0 && r.Concurrency > 0:
		return fmt.Errorf("requestRate and concurrency: give one load, not both")
	case (r.Pick == "" || r.Pick == Throughput) && (r.RequestRate > 0 || r.Concurrency > 0):
		return fmt.Errorf("requestRate %g / concurrency %d: pick throughput fills the pool and reads no load; pick load-match (the fewest GPUs for the load) or autoscale", r.RequestRate, r.Concurrency)
	case !(r.MaxGPUs >= 0) || !(r.MaxCostPerHour >= 0) || math.IsInf(r.MaxGPUs+r.MaxCostPerHour, 0):
		return fmt.Errorf("budget: maxGpus %g and maxCostPerHour %g must be finite and >= 0", r.MaxGPUs, r.MaxCostPerHour)
	case r.Top < 0:
		return fmt.Errorf("top: %d must be >= 0", r.Top)
	case r.Confidence != 0 && !(r.Confidence >= 0.5 && r.Confidence <= 0.99):
		return fmt.Errorf("confidence: %g, want 0.5 to 0.99 (the chance the SLA holds), or 0 to judge the predictions as they are", r.Confidence)
	}
	if err := slo.CheckPercentile("sla.ttftPercentile", r.SLA.TTFTPercentile); err != nil {
		return err
	}
	if err := slo.CheckPercentile("sla.itlPercentile", r.SLA.ITLPercentile); err != nil {
		return err
	}
	if _, err := ParsePick(string(r.Pick)); err != nil {
		return err
	}
	if r.Pick == LoadMatch && r.RequestRate == 0 && r.Concurrency == 0 {
		return fmt.Errorf("pick load-match: needs the load to match; set requestRate (--request-rate) or concurrency")
	}
	for i, p := range r.Pool {
		switch {
		case strings.TrimSpace(p.Device) == "":
			return fmt.Errorf("pool[%d].device: required, e.g. h100_sxm, h100_sxm:1g.10gb or a10:1/2", i)
		case p.Count < 1 || p.Count > MaxPoolDevices:
			return fmt.Errorf("pool[%d].count: %d must be 1 to %d", i, p.Count, MaxPoolDevices)
		case !(p.PricePerHour >= 0) || math.IsInf(p.PricePerHour, 0):
			return fmt.Errorf("pool[%d].pricePerHour: %g must be finite and >= 0", i, p.PricePerHour)
		case p.GPUsPerNode < 0 || p.GPUsPerNode > MaxGPUsPerNode:
			return fmt.Errorf("pool[%d].gpusPerNode: %d must be 0 (the GPU's NVLink domain) to %d", i, p.GPUsPerNode, MaxGPUsPerNode)
		}
		for j := range i {
			if strings.EqualFold(r.Pool[j].Device, p.Device) {
				return fmt.Errorf("pool[%d].device: %s is listed twice (pool[%d]); add the counts", i, p.Device, j)
			}
		}
	}
	for _, m := range r.Modes {
		if m != "agg" && m != "disagg" {
			return fmt.Errorf("modes: %q is not agg or disagg", m)
		}
	}
	priced := 0
	for _, p := range r.Pool {
		if p.PricePerHour > 0 {
			priced++
		}
	}
	if priced > 0 && priced < len(r.Pool) {
		return fmt.Errorf("pool: prices are given for %d of %d device kinds; price all or none so costs compare", priced, len(r.Pool))
	}
	if r.MaxCostPerHour > 0 && priced == 0 {
		return fmt.Errorf("budget.maxCostPerHour: needs pricePerHour on the pool's devices")
	}
	return nil
}

func (r *Request) wants(mode string) bool {
	if len(r.Modes) == 0 {
		return true
	}
	for _, m := range r.Modes {
		if m == mode {
			return true
		}
	}
	return false
}

func (r *Request) priced() bool { return len(r.Pool) > 0 && r.Pool[0].PricePerHour > 0 }

func (r *Request) top() int {
	if r.Top == 0 {
		return 10
	}
	return r.Top
}
