package calibrate

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

// Dataset is every calibration case found in a directory.
type Dataset struct {
	Cases   []Case
	Skipped []Skipped
}

// LoadDir reads silicon_calibration.csv and, if present, trtllm_max_throughput.csv.
func LoadDir(dir string, cat *catalog.Catalog) (*Dataset, error) {
	resolve := func(name string) (bool, bool) {
		m, err := cat.Model(name)
		if err != nil {
			return false, false
		}
		return m.MoE == nil, true
	}
	known := func(g string) bool { _, err := cat.GPU(g); return err == nil }
	silicon := filepath.Join(dir, "silicon_calibration.csv")
	if _, err := os.Stat(silicon); err != nil {
		return nil, fmt.Errorf("calibration data: %w (pass --data with the folder holding silicon_calibration.csv)", err)
	}
	cases, skipped, err := LoadSilicon(silicon, resolve)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Cases: cases, Skipped: skipped}
	mt := filepath.Join(dir, "trtllm_max_throughput.csv")
	if _, err := os.Stat(mt); err == nil {
		c, s, err := LoadMaxThroughput(mt, resolve, known)
		if err != nil {
			return nil, err
		}
		ds.Cases = append(ds.Cases, c...)
		ds.Skipped = append(ds.Skipped, s...)
	}
	return ds, nil
}

// Unfitted is every case FitSet leaves out: the parameters never see them,
// so any parameters' predictions of them are out of sample.
func (d *Dataset) Unfitted() []Case {
	var out []Case
	for _, c := range d.Cases {
		if !(c.Source == "max-throughput" || c.Dense && c.Mode == "agg") {
			out = append(out, c)
		}
	}
	return out
}

// FitSet is the subset the parameters are fitted on: aggregated runs of
// dense models and the max-throughput tables. MoE, disaggregated and
// attention-DP runs depend on parallelism details the model simplifies and
// are reported, not fitted, so they cannot pull the shared efficiencies.
func (d *Dataset) FitSet() []Case {
	var out []Case
	for _, c := range d.Cases {
		if c.Source == "max-throughput" || c.Dense && c.Mode == "agg" {
			out = append(out, c)
		}
	}
	return out
}
