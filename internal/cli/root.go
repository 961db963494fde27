// Package cli wires gpuplane's commands. Each command parses flags, loads
// its inputs and calls a pure core; nothing here computes results itself.
package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/kernels"
	"github.com/gpuplane/gpuplane/internal/output"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=...".
var Version = "dev"

// globals are the flags every command shares.
type globals struct {
	output       string
	catalogFiles []string
	paramsFile   string
	kernelsDir   string
	kernelsCache string
	verbose      bool
	stdout       io.Writer
	stderr       io.Writer
	log          *slog.Logger
	// loaded is the environment once read: a command's steps share it,
	// so a model added from --model-config is seen by all of them.
	loaded *estimate.Env
	// kernels is --kernels' library (with its cache) once env has opened it.
	kernels *kernels.Library
}

func (g *globals) format() (output.Format, error) { return output.ParseFormat(g.output) }

// env loads the catalog (embedded plus user files) and the model parameters.
func (g *globals) env() (estimate.Env, error) {
	if g.loaded != nil {
		return *g.loaded, nil
	}
	cat, err := catalog.Default()
	if err != nil {
		return estimate.Env{}, err
	}
	for _, f := range g.catalogFiles {
		if err := cat.LoadFile(f); err != nil {
			return estimate.Env{}, fmt.Errorf("--catalog: %w", err)
		}
	}
	params, err := perf.DefaultParams()
	if g.paramsFile != "" {
		params, err = perf.LoadParams(g.paramsFile)
		if err != nil {
			err = fmt.Errorf("--params: %w", err)
		}
	}
	if err != nil {
		return estimate.Env{}, err
	}
	if g.kernelsDir != "" {
		lib, err := kernels.Open(g.kernelsDir, func(system string) (*catalog.GPU, bool) {
			gpu, err := cat.GPU(system)
			return gpu, err == nil
		})
		if err != nil {
			return estimate.Env{}, err
		}
		lib.CacheDir = g.kernelsCache
		params.Kernels = lib.Source()
		g.kernels = lib
	}
	g.loaded = &estimate.Env{Catalog: cat, Params: params}
	return *g.loaded, nil
}

// envWithModel is env plus, when path is set, a model read from a Hugging
// Face config.json (returned so the caller can default to it).
func (g *globals) envWithModel(path string) (estimate.Env, *catalog.Model, error) {
	env, err := g.env()
	if err != nil || path == "" {
		return env, nil, err
	}
	m, err := catalog.LoadHFConfig(path, "")
	if err == nil {
		err = env.Catalog.AddModel(m)
	}
	if err != nil {
		return env, nil, fmt.Errorf("--model-config: %w", err)
	}
	return env, m, nil
}

// NewRoot builds the command tree writing to the given streams.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	g := &globals{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "gpuplane",
		Short:         "GPU control plane for LLM inference on Kubernetes",
		Long:          "gpuplane predicts how fast LLMs serve on GPUs, whole or sliced (MIG, vGPU), without a GPU.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if g.verbose {
				level = slog.LevelDebug
			}
			g.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
			if cmd.Name() == "simulate" && strings.HasSuffix(g.output, ".html") {
				return nil // simulate -o report.html names its report
			}
			_, err := g.format()
			return err
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVarP(&g.output, "output", "o", "table", "output format: table, json, yaml or jsonl")
	pf.StringArrayVar(&g.catalogFiles, "catalog", nil, "extra catalog file (YAML with gpus, models, mig, vgpu); repeatable")
	pf.StringVar(&g.paramsFile, "params", "", "performance-model parameter file (default: the embedded calibrated one)")
	pf.StringVar(&g.kernelsCache, "kernels-cache", defaultKernelsCache(), "folder where --kernels keeps its parsed tables between runs (\"\": parse every run)")
	pf.StringVar(&g.kernelsDir, "kernels", "", "measured kernel tables (a tree like shared/reference/kernels): price GEMMs, attention and all-reduces from them where they cover the GPU and backend (default: none, the roofline)")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log debug detail to stderr")
	root.AddCommand(newVersionCmd(g), newCatalogCmd(g), newEstimateCmd(g), newCalibrateCmd(g), newDevCmd(g), newSimulateCmd(g), newConfigureCmd(g), newDemoCmd(g), newPlannerCmd(g), newDRADriverCmd(g), newExplainCmd(g), newEmulateCmd(g), newBenchCmd(g), newFrontendCmd(g), newControllerCmd(g))
	return root
}

// Main runs the CLI and returns the process exit code.
func Main(args []string) int { return MainAs("", args) }

// MainAs is Main under another command name in help and usage ("kubectl
// gpuplane" for the kubectl plugin); "" keeps gpuplane.
func MainAs(name string, args []string) int {
	root := newRootAs(name, os.Stdout, os.Stderr)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

// newRootAs is NewRoot shown in help and usage as name ("" keeps gpuplane).
func newRootAs(name string, stdout, stderr io.Writer) *cobra.Command {
	root := NewRoot(stdout, stderr)
	if name != "" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	}
	return root
}

type versionInfo struct {
	Version string `json:"version"`
	Params  string `json:"params"`
}

func (v versionInfo) Header() []string { return []string{"VERSION", "PARAMS"} }
func (v versionInfo) Rows() [][]string { return [][]string{{v.Version, v.Params}} }

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the source of the model parameters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := g.env()
			if err != nil {
				return err
			}
			f, _ := g.format()
			return output.Write(g.stdout, f, versionInfo{Version: Version, Params: env.Params.Source})
		},
	}
}

// defaultKernelsCache is the user's cache folder for parsed kernel tables,
// or "" where the system names none.
func defaultKernelsCache() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "gpuplane", "kernels")
}
