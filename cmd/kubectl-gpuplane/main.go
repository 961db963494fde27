// Command kubectl-gpuplane makes gpuplane a kubectl plugin: with this binary
// on the PATH, `kubectl gpuplane explain pod NAME` runs `gpuplane explain pod NAME`.
package main

import (
	"os"

	"github.com/gpuplane/gpuplane/internal/cli"
)

func main() { os.Exit(cli.MainAs("kubectl gpuplane", os.Args[1:])) }
