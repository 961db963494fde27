package planner

import (
	"fmt"
	"math"

	"github.com/gpuplane/gpuplane/internal/slo"
)

// Config sets the planner's targets, prediction and limits. Times are in
// seconds, latencies in milliseconds. JSON names are the planner section of
// a scenario file and of `gpuplane planner run --config`.
type Config struct {
	// Interval is the adjustment interval (default 30 s).
	Interval float64 `json:"intervalSeconds,omitempty"`
	TTFTms   float64 `json:"ttftMs"`
	ITLms    float64 `json:"itlMs"`
	// TTFTPercentile and ITLPercentile are the percentiles the SLO holds
	// (e.g. 90; 0: the mean). Prefill is sized with the M/D/1 tail at that
	// percentile and corrected from the observed histogram's.
	TTFTPercentile float64 `json:"ttftPercentile,omitempty"`
	ITLPercentile  float64 `json:"itlPercentile,omitempty"`
	// TTFTTarget and ITLTarget are the fractions of the SLO the pools are
	// sized to (default 0.5 and 0.9 for a mean SLO: the mean must sit below
	// the target so that nearly every request does; 0.8 for a TTFT
	// percentile, whose tail the queueing model already sizes for).
	TTFTTarget float64 `json:"ttftTarget,omitempty"`
	ITLTarget  float64 `json:"itlTarget,omitempty"`
	// Predictor: constant, moving-average, holt, kalman or arima (default holt); Window its history.
	Predictor string `json:"predictor,omitempty"`
	Window    int    `json:"window,omitempty"`
	// StartupDelay is a new worker's start-up time: load is predicted that far ahead.
	StartupDelay float64 `json:"startupDelaySeconds,omitempty"`
	MinPrefill   int     `json:"minPrefill,omitempty"`
	MaxPrefill   int     `json:"maxPrefill,omitempty"`
	MinDecode    int     `json:"minDecode,omitempty"`
	MaxDecode    int     `json:"maxDecode,omitempty"`
	// GPUBudget bounds prefill*PrefillGPUs + decode*DecodeGPUs (0: none).
	GPUBudget   int `json:"gpuBudget,omitempty"`
	PrefillGPUs int `json:"prefillGpus,omitempty"`
	DecodeGPUs  int `json:"decodeGpus,omitempty"`
	// Cooldown is the least time between a scale event and a scale-down
	// (default 120 s); Stabilization the window whose largest target a
	// scale-down may not go below (default 180 s).
	Cooldown      float64 `json:"cooldownSeconds,omitempty"`
	Stabilization float64 `json:"stabilizationSeconds,omitempty"`
	// PrefillRanks are a prefill replica's attention-DP ranks (default 1):
	// each schedules its own prompts, so a replica of 8 ranks drains a
	// queue 8 at a time.
	PrefillRanks int `json:"prefillRanks,omitempty"`
	// QueueHigh/Low are requests waiting for their first token per prefill engine (a replica's
	// attention-DP ranks each count), KVHigh/Low the decode cache use, that trigger a reactive
	// scale-up and allow a scale-down.
	QueueHigh float64 `json:"queueHigh,omitempty"`
	QueueLow  float64 `json:"queueLow,omitempty"`
	KVHigh    float64 `json:"kvHigh,omitempty"`
	KVLow     float64 `json:"kvLow,omitempty"`
	// CorrectionAlpha smooths the observed/expected latency ratio; the
	// correction stays within [CorrectionMin, CorrectionMax].
	CorrectionAlpha float64 `json:"correctionAlpha,omitempty"`
	CorrectionMin   float64 `json:"correctionMin,omitempty"`
	CorrectionMax   float64 `json:"correctionMax,omitempty"`
}

func (c *Config) defaults() {
	set := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	set(&c.Interval, 30)
	if c.TTFTPercentile > 0 {
		set(&c.TTFTTarget, 0.8)
	}
	set(&c.TTFTTarget, 0.5)
	set(&c.ITLTarget, 0.9)
	set(&c.Cooldown, 120)
	set(&c.Stabilization, 180)
	set(&c.QueueHigh, 6)
	set(&c.QueueLow, 2)
	set(&c.KVHigh, 0.9)
	set(&c.KVLow, 0.6)
	set(&c.CorrectionAlpha, 0.3)
	set(&c.CorrectionMin, 0.5)
	set(&c.CorrectionMax, 3)
	if c.Predictor == "" {
		c.Predictor = PredictHolt
	}
	for _, v := range []*int{&c.MinPrefill, &c.MinDecode, &c.PrefillGPUs, &c.DecodeGPUs, &c.PrefillRanks} {
		if *v == 0 {
			*v = 1
		}
	}
	if c.MaxPrefill == 0 {
		c.MaxPrefill = 64
	}
	if c.MaxDecode == 0 {
		c.MaxDecode = 64
	}
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if err := slo.CheckPercentile("planner.ttftPercentile", c.TTFTPercentile); err != nil {
		return err
	}
	if err := slo.CheckPercentile("planner.itlPercentile", c.ITLPercentile); err != nil {
		return err
	}
	switch {
	case !(c.TTFTms > 0) || !(c.ITLms > 0) || math.IsInf(c.TTFTms+c.ITLms, 0):
		return fmt.Errorf("planner: ttftMs %g and itlMs %g must be finite and > 0 (the SLO the planner holds)", c.TTFTms, c.ITLms)
	case !(c.TTFTTarget > 0 && c.TTFTTarget <= 1) || !(c.ITLTarget > 0 && c.ITLTarget <= 1):
		return fmt.Errorf("planner.ttftTarget %g / itlTarget %g: fractions of the SLO in (0, 1]", c.TTFTTarget, c.ITLTarget)
	case !(c.Interval >= 0.1 && c.Interval <= 3600):
		return fmt.Errorf("planner.intervalSeconds: %g must be 0.1 to 3600", c.Interval)
	case !(c.StartupDelay >= 0 && c.StartupDelay <= 86400):
		return fmt.Errorf("planner.startupDelaySeconds: %g must be 0 to 86400", c.StartupDelay)
	case !(c.Cooldown >= 0 && c.Cooldown <= 86400) || !(c.Stabilization >= 0 && c.Stabilization <= 86400):
		return fmt.Errorf("planner.cooldownSeconds %g and stabilizationSeconds %g must be 0 to 86400", c.Cooldown, c.Stabilization)
	case !(c.QueueLow >= 0) || math.IsInf(c.QueueHigh, 0):
		return fmt.Errorf("planner.queueLow %g and queueHigh %g must be finite and >= 0", c.QueueLow, c.QueueHigh)
	case !(c.KVLow >= 0):
		return fmt.Errorf("planner.kvLow: %g must be >= 0", c.KVLow)
	case c.MaxPrefill > 100_000 || c.MaxDecode > 100_000 || c.Window < 0 || c.Window > 10_000:
		return fmt.Errorf("planner: maxPrefill %d and maxDecode %d at most 100,000, window %d 0 to 10,000", c.MaxPrefill, c.MaxDecode, c.Window)
	case math.IsInf(c.CorrectionMax, 0) || math.IsNaN(c.CorrectionMax) || math.IsNaN(c.CorrectionMin):
		return fmt.Errorf("planner.correctionMin/Max: %g/%g must be finite", c.CorrectionMin, c.CorrectionMax)
	case c.MinPrefill < 1 || c.MinDecode < 1:
		return fmt.Errorf("planner.minPrefill/minDecode: must be >= 1 (a pool never scales to zero)")
	case c.MaxPrefill < c.MinPrefill:
		return fmt.Errorf("planner.maxPrefill: %d is below minPrefill %d", c.MaxPrefill, c.MinPrefill)
	case c.MaxDecode < c.MinDecode:
		return fmt.Errorf("planner.maxDecode: %d is below minDecode %d", c.MaxDecode, c.MinDecode)
	case c.GPUBudget < 0 || c.PrefillGPUs < 1 || c.DecodeGPUs < 1:
		return fmt.Errorf("planner.gpuBudget/prefillGpus/decodeGpus: budget >= 0, GPUs per replica >= 1")
	case c.GPUBudget > 0 && c.GPUBudget < c.PrefillGPUs+c.DecodeGPUs:
		return fmt.Errorf("planner.gpuBudget: %d cannot hold one prefill (%d GPUs) and one decode (%d GPUs) replica", c.GPUBudget, c.PrefillGPUs, c.DecodeGPUs)
	case c.PrefillRanks < 1 || c.PrefillRanks > 1024:
		return fmt.Errorf("planner.prefillRanks: %d must be 1 to 1024 (the attention-DP ranks of a prefill replica)", c.PrefillRanks)
	case c.QueueLow > c.QueueHigh:
		return fmt.Errorf("planner.queueLow: %g above queueHigh %g", c.QueueLow, c.QueueHigh)
	case c.KVLow > c.KVHigh || !(c.KVHigh <= 1):
		return fmt.Errorf("planner.kvLow/kvHigh: %g/%g: need 0 <= kvLow <= kvHigh <= 1", c.KVLow, c.KVHigh)
	case !(c.CorrectionAlpha > 0 && c.CorrectionAlpha <= 1):
		return fmt.Errorf("planner.correctionAlpha: %g must be in (0, 1]", c.CorrectionAlpha)
	case c.CorrectionMin <= 0 || c.CorrectionMax < c.CorrectionMin:
		return fmt.Errorf("planner.correctionMin/Max: need 0 < min <= max")
	}
	if _, err := NewPredictor(c.Predictor, c.Window); err != nil {
		return fmt.Errorf("planner.%w", err) // the error starts with the field, "predictor: ..."
	}
	return nil
}
