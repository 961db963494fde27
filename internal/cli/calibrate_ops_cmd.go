package cli

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/kernels"
	"github.com/gpuplane/gpuplane/internal/output"
)

// opsTable lists each table's held-out accuracy, then the pooled kinds.
type opsTable struct{ acc *kernels.TreeAccuracy }

func (t opsTable) Header() []string {
	return []string{"OP", "SYSTEM", "BACKEND", "HELD OUT", "MISSED", "MAPE", "MEDIAN", "P90", "BIAS", "KEPT OUT"}
}

func (t opsTable) Rows() [][]string {
	var rows [][]string
	for _, a := range t.acc.Sets {
		rows = append(rows, []string{a.Op, a.System, a.Backend, fmt.Sprint(a.N), fmt.Sprint(a.Missed), pct(a.MAPE), pct(a.Median), pct(a.P90),
			fmt.Sprintf("%+.1f%%", a.Bias), keptOut(a)})
	}
	for _, p := range t.acc.Pooled {
		rows = append(rows, []string{p.Op, "pooled", "all", fmt.Sprint(p.N), fmt.Sprint(p.Missed), pct(p.MAPE), "-", "-", fmt.Sprintf("%+.1f%%", p.Bias), ""})
	}
	return rows
}

// keptOut names the rows of a's kind its set kept out of the tables.
func keptOut(a kernels.SetAccuracy) string {
	var parts []string
	if n := a.Dropped[a.Op]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d faster than the roofline", n))
	}
	if n := a.Stalled[a.Op]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d stalls", n))
	}
	var reasons []string
	for why := range a.Skipped {
		if strings.HasPrefix(why, a.Op+" ") {
			reasons = append(reasons, why)
		}
	}
	sort.Strings(reasons)
	for _, why := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", a.Skipped[why], strings.TrimPrefix(why, a.Op+" ")))
	}
	return strings.Join(parts, "; ")
}

// borrowTable lists each pair's borrowed accuracy, then the pooled kinds.
type borrowTable struct{ rep *kernels.BorrowReport }

func (t borrowTable) Header() []string {
	return []string{"OP", "GPU", "TABLES OF", "BACKEND", "HELD OUT", "MAPE SCALED", "MAPE UNSCALED"}
}

func (t borrowTable) Rows() [][]string {
	var rows [][]string
	for _, a := range slices.Concat(t.rep.Pairs, t.rep.Pooled) {
		rows = append(rows, []string{a.Op, a.To, a.From, a.Backend, fmt.Sprint(a.N), pct(a.MAPE), pct(a.Unscaled)})
	}
	return rows
}

func newCalibrateOpsCmd(g *globals) *cobra.Command {
	var holdOneIn int
	var borrowed bool
	cmd := &cobra.Command{
		Use:   "ops",
		Short: "Test a kernel tree's tables on their own held-out rows, per operation kind",
		Long: `Holds out about one row in --hold-one-in of every table of every system and backend of the
kernel tree (picked by a hash of the row, so the same rows every run), answers them from the rest by
the interpolation and roofline extrapolation --kernels prices with, and reports the error per table
and pooled per operation kind: GEMM, context and generation attention, context and generation MLA,
gated delta-net (linear attention), all-reduce and fused MoE. Rows the loader keeps out of the tables
(faster than the GPU's roofline, stalls, shapes the keys cannot hold) are counted, not scored. Run it
on a kernel tree before pointing --kernels at it.

--borrowed tries instead the tables a GPU without its own borrows (a MIG or vGPU slice, an L4, an
H100 NVL): for every pair of measured GPUs of one architecture and major compute capability, the
held-out rows of one are answered from the other's tables, scaled to its SMs and bandwidth as
--kernels scales them, and as they stand.

  gpuplane calibrate ops --kernels ../shared/reference/kernels
  gpuplane calibrate ops --kernels ../shared/reference/kernels -o json
  gpuplane calibrate ops --kernels ../shared/reference/kernels --borrowed`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.kernelsDir == "" {
				return fmt.Errorf("--kernels: required; point it at the kernel tables' root, e.g. --kernels ../shared/reference/kernels")
			}
			if holdOneIn < 2 || holdOneIn > 1000 {
				return fmt.Errorf("--hold-one-in: %d; use 2 to 1000 (10 holds out one row in ten)", holdOneIn)
			}
			f, err := g.format()
			if err != nil {
				return err
			}
			if borrowed {
				if _, err := g.env(); err != nil {
					return err
				}
				rep, err := g.kernels.EvaluateBorrowed(holdOneIn, func(i, n int, to, from, backend string) {
					fmt.Fprintf(g.stderr, "[%d/%d] %s from %s, %s\n", i, n, to, from, backend)
				})
				if err != nil {
					return err
				}
				if len(rep.Pairs) == 0 {
					return fmt.Errorf("--kernels %s: no two measured GPUs share an architecture and compute capability, so no borrowing can be tried", g.kernelsDir)
				}
				if f != output.Table {
					return output.Write(g.stdout, f, rep)
				}
				return output.WriteTable(g.stdout, borrowTable{rep})
			}
			acc, err := kernels.EvaluateTree(g.kernelsDir, holdOneIn, func(i, n int, system, backend string) {
				fmt.Fprintf(g.stderr, "[%d/%d] %s/%s\n", i, n, system, backend)
			})
			if err != nil {
				return err
			}
			if len(acc.Sets) == 0 {
				return fmt.Errorf("--kernels %s: no table row was held out; the tables are too small to hold one row in %d out (lower --hold-one-in)", g.kernelsDir, holdOneIn)
			}
			if f != output.Table {
				return output.Write(g.stdout, f, acc)
			}
			return output.WriteTable(g.stdout, opsTable{acc})
		},
	}
	cmd.Flags().IntVar(&holdOneIn, "hold-one-in", 10, "hold out about one row in this many of every table")
	cmd.Flags().BoolVar(&borrowed, "borrowed", false, "try the tables a GPU without its own borrows: each measured GPU's held-out rows answered from another of its architecture's tables")
	return cmd
}
