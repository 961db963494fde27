package cli

import (
	"fmt"

	"github.com/gpuplane/gpuplane/internal/atomicfile"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// writeParams validates p and writes it to out whole or not at all, for
// the calibrate commands' --out.
func writeParams(g *globals, out string, p *perf.Params) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("parameters for --out %s: %w", out, err)
	}
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(out, b, 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(g.stderr, "wrote %s\n", out)
	return nil
}
