// Command gpuplane is the GPU control plane's CLI.
package main

import (
	"os"

	"github.com/gpuplane/gpuplane/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
