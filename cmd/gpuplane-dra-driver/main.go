// Command gpuplane-dra-driver is the kubelet plugin of the gpu.gpuplane.io
// DRA driver.
package main

import (
	"context"
	"os"

	"github.com/gpuplane/gpuplane/internal/drivercli"
)

func main() { os.Exit(drivercli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }
