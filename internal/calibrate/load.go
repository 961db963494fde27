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
	// silicon is the serving-runs table, read once, for GridRows.
	silicon *csvTable
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
	t, err := readSilicon(silicon)
	if err != nil {
		return nil, err
	}
	t.domain = func(system string) int {
		g, err := cat.GPU(system)
		if err != nil {
			return 0
		}
		return g.MaxTP()
	}
	cases, skipped, err := siliconCases(t, resolve)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Cases: cases, Skipped: skipped, silicon: t}
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

// GridRows are the aggregated serving runs as decision grids, from the
// table LoadDir read.
func (d *Dataset) GridRows() ([]GridRow, error) {
	if d.silicon == nil {
		return nil, nil
	}
	return gridRows(d.silicon)
}

// fitted says whether the parameters are fitted on c: aggregated runs of
// dense models and the max-throughput tables. MoE, disaggregated and
// attention-DP runs depend on parallelism details the model simplifies and
// are reported, not fitted, so they cannot pull the shared efficiencies.
func (c Case) fitted() bool { return c.Source == "max-throughput" || c.Dense && c.Mode == "agg" }

// FitSet is the subset the parameters are fitted on (see fitted).
func (d *Dataset) FitSet() []Case { return d.cases(true) }

// Unfitted is every case FitSet leaves out: the parameters never see them,
// so any parameters' predictions of them are out of sample.
func (d *Dataset) Unfitted() []Case { return d.cases(false) }

func (d *Dataset) cases(fitted bool) []Case {
	var out []Case
	for _, c := range d.Cases {
		if c.fitted() == fitted {
			out = append(out, c)
		}
	}
	return out
}
