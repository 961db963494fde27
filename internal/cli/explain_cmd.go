package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/fleet"
	"github.com/gpuplane/gpuplane/internal/dra/plugin"
	"github.com/gpuplane/gpuplane/internal/explain"
	"github.com/gpuplane/gpuplane/internal/kubeclient"
	"github.com/gpuplane/gpuplane/internal/output"
)

type explainFlags struct {
	kubeconfig, from, namespace string
	devices                     bool
}

func (f *explainFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	cmd.Flags().StringVar(&f.from, "from", "", "explain offline from a dump: kubectl get nodes,pods,resourceslices,deviceclasses,resourceclaims,devicetaintrules -A -o yaml")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "default", "namespace of the pod or claim")
}

// snapshot loads the cluster state live or from the dump.
func (f *explainFlags) snapshot(ctx context.Context, withPods bool) (*explain.Snapshot, error) {
	if f.from != "" {
		file, err := os.Open(f.from)
		if err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		defer file.Close()
		s, err := explain.Load(file)
		if err != nil {
			return nil, fmt.Errorf("--from %s: %w", f.from, err)
		}
		return s, nil
	}
	client, err := kubeclient.Clientset(f.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%w (or explain offline from a dump: --from dump.yaml)", err)
	}
	s, err := explain.Live(ctx, client)
	if err != nil {
		return nil, err
	}
	if withPods {
		if err := s.AddPods(ctx, client, f.namespace); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func newExplainCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "explain", Short: "Why a pod's or claim's devices cannot be allocated, the nearest fixes, and how many more fit",
		Long: `Explains DRA allocation the way the scheduler decides it: the verdict comes from Kubernetes'
structured allocator; for each request and each node's devices it shows which selector condition is
false (with the values it saw), which devices or shares are taken and by whom, which shared counters
are used up, which taints are not tolerated, node selection and matchAttribute constraints, then the
nearest fixes. Works against a cluster or offline from a dump. Also runs as a kubectl plugin
(kubectl gpuplane explain ...) from the kubectl-gpuplane binary.

  gpuplane explain pod vllm-decode-7c9f -n serving
  gpuplane explain claim my-claim --from dump.yaml -o json
  gpuplane explain capacity -f claim-template.yaml --add-nodes examples/fleet.yaml`}
	var f explainFlags
	write := func(rep *explain.Report) error {
		format, err := g.format()
		if err != nil {
			return err
		}
		if format == output.Table {
			return rep.WriteText(g.stdout, f.devices)
		}
		return output.Write(g.stdout, format, rep)
	}
	pod := &cobra.Command{Use: "pod NAME", Short: "Explain a pod's claims together on the nodes it may use", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.snapshot(cmd.Context(), true)
			if err != nil {
				return err
			}
			rep, err := explain.ExplainPod(cmd.Context(), s, f.namespace, args[0])
			if err != nil {
				return err
			}
			return write(rep)
		}}
	claim := &cobra.Command{Use: "claim NAME", Short: "Explain one ResourceClaim", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.snapshot(cmd.Context(), false)
			if err != nil {
				return err
			}
			rep, err := explain.ExplainClaim(cmd.Context(), s, f.namespace, args[0])
			if err != nil {
				return err
			}
			return write(rep)
		}}
	for _, c := range []*cobra.Command{pod, claim} {
		f.add(c)
		c.Flags().BoolVar(&f.devices, "devices", false, "list every device's verdict instead of grouping them")
	}
	cmd.AddCommand(pod, claim, newExplainCapacityCmd(g))
	return cmd
}

func newExplainCapacityCmd(g *globals) *cobra.Command {
	var f explainFlags
	var file, addNodes string
	var selector map[string]string
	var limit int
	cmd := &cobra.Command{Use: "capacity -f TEMPLATE", Short: "How many more claims of a ResourceClaimTemplate (or claim) fit now, and where; what-if with --add-nodes",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, spec, err := readClaimSpec(file)
			if err != nil {
				return err
			}
			s, err := f.snapshot(cmd.Context(), false)
			if err != nil {
				return err
			}
			var whatIf map[string]bool
			if addNodes != "" {
				fl, err := fleet.Load(addNodes)
				if err != nil {
					return fmt.Errorf("--add-nodes: %w", err)
				}
				if whatIf, err = s.AddFleet(fl, catalog.MustDefault(), plugin.DriverName); err != nil {
					return fmt.Errorf("--add-nodes %s: %w", addNodes, err)
				}
			}
			if limit < 1 {
				return fmt.Errorf("--limit: %d, want >= 1", limit)
			}
			rep, err := explain.Capacity(cmd.Context(), s, name, spec, selector, limit, whatIf)
			if err != nil {
				return err
			}
			format, err := g.format()
			if err != nil {
				return err
			}
			if format == output.Table {
				return rep.WriteText(g.stdout)
			}
			return output.Write(g.stdout, format, rep)
		}}
	f.add(cmd)
	cmd.Flags().StringVarP(&file, "file", "f", "", "ResourceClaimTemplate or ResourceClaim (resource.k8s.io/v1) YAML")
	cmd.Flags().StringVar(&addNodes, "add-nodes", "", "Fleet file of node pools to add (what-if), as for `gpuplane dra-driver fleet`")
	cmd.Flags().StringToStringVar(&selector, "node-selector", nil, "only nodes with these labels (the pods' node selector), e.g. agentpool=nv12")
	cmd.Flags().IntVar(&limit, "limit", 10000, "stop counting here")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

// readClaimSpec reads the claim spec of a ResourceClaimTemplate or ResourceClaim file.
func readClaimSpec(path string) (string, resourceapi.ResourceClaimSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", resourceapi.ResourceClaimSpec{}, fmt.Errorf("-f: %w", err)
	}
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		return "", resourceapi.ResourceClaimSpec{}, fmt.Errorf("-f %s: %w", path, err)
	}
	switch o := obj.(type) {
	case *resourceapi.ResourceClaimTemplate:
		return o.Name, o.Spec.Spec, nil
	case *resourceapi.ResourceClaim:
		return o.Name, o.Spec, nil
	}
	return "", resourceapi.ResourceClaimSpec{}, fmt.Errorf("-f %s: kind %s; want a resource.k8s.io/v1 ResourceClaimTemplate or ResourceClaim (%s)",
		path, gvk.Kind, strings.TrimSpace(gvk.String()))
}
