package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/classes"
	"github.com/gpuplane/gpuplane/internal/dra/fleet"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
	"github.com/gpuplane/gpuplane/internal/dra/profiles"
	"github.com/gpuplane/gpuplane/internal/kubeclient"
	"github.com/gpuplane/gpuplane/internal/output"
)

func newDRADriverCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "dra-driver", Short: "The gpu.gpuplane.io DRA driver's fleet mode, device profiles and classes (the kubelet plugin is gpuplane-dra-driver)"}
	cmd.AddCommand(newDRAFleetCmd(g), newDRAProfilesCmd(g), newDRAClassesCmd(g))
	return cmd
}

func newDRAFleetCmd(g *globals) *cobra.Command {
	var kubeconfig, file string
	var createNodes, dryRun, once, noClasses bool
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Publish ResourceSlices for many fake nodes from their device profiles",
		Long: `Fleet mode: expands a Fleet file (node pools of device profiles) into nodes and publishes each
node's slices exactly as the kubelet plugin would, owned by the Node. With --create-nodes it
registers kwok-managed Nodes first (local control plane). With --dry-run it prints the
ResourceSlices and touches no cluster: a what-if for capacity planning.

  gpuplane dra-driver fleet -f examples/fleet.yaml --dry-run
  gpuplane dra-driver fleet -f examples/fleet.yaml --create-nodes --kubeconfig dev/kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl, err := fleet.Load(file)
			if err != nil {
				return fmt.Errorf("-f %s: %w", file, err)
			}
			nodes, err := fl.Nodes(catalog.MustDefault())
			if err != nil {
				return fmt.Errorf("-f %s: %w", file, err)
			}
			if dryRun {
				return writeSlices(g, nodes)
			}
			client, err := kubeclient.Clientset(kubeconfig)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			t0 := time.Now()
			pub := &fleet.Publisher{Client: client, Driver: plugin.DriverName, CreateNodes: createNodes, InstallClasses: !noClasses}
			r, err := pub.Start(ctx, nodes)
			if err != nil {
				return err
			}
			defer r.Stop()
			wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			if err := r.WaitPublished(wctx); err != nil {
				return err
			}
			devices := 0
			for _, n := range nodes {
				devices += len(n.Slices.Devices)
			}
			g.log.Info("fleet published", "nodes", len(nodes), "devices", devices, "took", time.Since(t0).Round(time.Millisecond))
			if once {
				return nil
			}
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "Fleet file (apiVersion gpuplane.io/v1alpha1, kind Fleet)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster, then $KUBECONFIG)")
	cmd.Flags().BoolVar(&createNodes, "create-nodes", false, "register the nodes as kwok-managed Nodes first")
	cmd.Flags().BoolVar(&noClasses, "no-classes", false, "do not create the driver's DeviceClasses (gpu., mig., vgpu.gpuplane.io; the Helm chart installs them too)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the ResourceSlices instead of publishing them")
	cmd.Flags().BoolVar(&once, "once", false, "exit once published instead of keeping the slices reconciled")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

// writeSlices prints the fleet's ResourceSlices as a YAML stream, named and
// numbered as the slice controller names them.
func writeSlices(g *globals, nodes []fleet.Node) error {
	var buf bytes.Buffer
	for _, n := range nodes {
		for _, rs := range n.Slices.ResourceSlices(plugin.DriverName, n.Name) {
			if err := writeDoc(&buf, rs); err != nil {
				return err
			}
		}
	}
	_, err := g.stdout.Write(buf.Bytes())
	return err
}

func writeDoc(buf *bytes.Buffer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	buf.WriteString("---\n")
	buf.Write(b)
	return nil
}

type profileList []profiles.Profile

func (l profileList) Header() []string {
	return []string{"PROFILE", "GPUS", "GPU", "SLICE", "MIG", "DESCRIPTION"}
}

func (l profileList) Rows() [][]string {
	var rows [][]string
	for _, p := range l {
		slice, mig := "whole", "no"
		if p.VGPU != nil {
			slice = "vgpu " + p.VGPU.Fraction
		}
		if p.MIG {
			mig = "yes"
		}
		rows = append(rows, []string{p.Name, fmt.Sprint(p.GPUs), p.GPU, slice, mig, p.Description})
	}
	return rows
}

func (l profileList) Items() []any { return items(l) }

func newDRAProfilesCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "profiles",
		Short: "List the device profiles fake nodes and fleet mode can use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := g.format()
			if err != nil {
				return err
			}
			return output.Write(g.stdout, f, profileList(profiles.All(catalog.MustDefault())))
		},
	}
}

func newDRAClassesCmd(g *globals) *cobra.Command {
	var ext bool
	cmd := &cobra.Command{
		Use:   "classes",
		Short: "Print the driver's DeviceClasses (gpu, mig, vgpu) as YAML",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var buf bytes.Buffer
			for _, c := range classes.All(plugin.DriverName, classes.Options{ExtendedResource: ext}) {
				if err := writeDoc(&buf, c); err != nil {
					return err
				}
			}
			_, err := g.stdout.Write(buf.Bytes())
			return err
		},
	}
	cmd.Flags().BoolVar(&ext, "extended-resource", false, "map the extended resource gpuplane.io/gpu to the gpu class")
	return cmd
}
