// Package slo holds what every SLO of gpuplane shares (configure's
// request, a scenario, the planner): a latency target judged on the mean
// or on a percentile of the requests.
package slo

import (
	"fmt"
	"strconv"
)

// CheckPercentile validates a percentile an SLO judges: 0 (the mean) or
// 50 to 99.9; field names it in the error.
func CheckPercentile(field string, p float64) error {
	if p == 0 || p >= 50 && p <= 99.9 {
		return nil
	}
	return fmt.Errorf("%s: %g must be 0 (the mean) or a percentile from 50 to 99.9, e.g. 90 or 99", field, p)
}

// Stat names the statistic a percentile judges: "mean" or "p90".
func Stat(p float64) string {
	if p <= 0 {
		return "mean"
	}
	return "p" + strconv.FormatFloat(p, 'f', -1, 64)
}

// Target says a latency target as headers show it, "p90 <= 500 ms"; a
// target of 0 is none, and the statistic then only names what is reported.
func Target(p, ms float64) string {
	if ms <= 0 {
		return Stat(p) + " (no target)"
	}
	return fmt.Sprintf("%s <= %g ms", Stat(p), ms)
}
