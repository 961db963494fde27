package fleet

import (
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
)

func TestNodes(t *testing.T) {
	f, err := Parse([]byte(`
apiVersion: gpuplane.io/v1alpha1
kind: Fleet
spec:
  features: {vgpu: true, nvlinkDomains: true}
  nodePools:
  - {name: nv12, profile: azure-nv12ads-a10-v5, count: 2, labels: {agentpool: nv12}}
  - {name: h100, profile: hgx-h100, count: 1, features: {dynamicMIG: true}}
  - {name: gb200, profile: gb200-nvl72, count: 4, nvlinkDomainNodes: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := f.Nodes(catalog.MustDefault())
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 7 || nodes[0].Name != "nv12-0" || nodes[0].Labels["agentpool"] != "nv12" || nodes[0].Labels["nvidia.com/gpu.present"] != "true" {
		t.Fatalf("nodes %+v", nodes[0])
	}
	if !nodes[2].Features.DynamicMIG || nodes[2].Features.VGPU || len(nodes[2].Slices.Slices) < 2 {
		t.Errorf("pool features not applied: %+v", nodes[2].Features)
	}
	domain := func(i int) string { return nodes[i].Inv.GPUs[0].NVLink.ClusterUUID }
	if domain(3) != domain(4) || domain(4) == domain(5) || domain(5) != domain(6) {
		t.Error("gb200 nodes not grouped two per NVLink domain")
	}
}

func TestParseErrors(t *testing.T) {
	head := "apiVersion: gpuplane.io/v1alpha1\nkind: Fleet\nspec:\n"
	cases := map[string]string{
		head + "  nodePools:\n  - {name: a, profile: hgx-h100, count: 1, gpu: 4}\n": `unknown field "spec.nodePools[0].gpu"`,
		head + "  nodePools:\n  - {name: a, profile: hgx-h100, count: 0}\n":         "spec.nodePools[0].count: 0",
		head + "  nodePools:\n  - {name: a, count: 1}\n":                            "spec.nodePools[0].profile: required",
		head + "  nodePools: []\n":                                                  "spec.nodePools is empty",
		"apiVersion: v1\nkind: Fleet\n":                                             "apiVersion/kind",
	}
	for in, want := range cases {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	f, _ := Parse([]byte(head + "  nodePools:\n  - {name: a, profile: hgx-h300, count: 1}\n"))
	if _, err := f.Nodes(catalog.MustDefault()); err == nil || !strings.Contains(err.Error(), "spec.nodePools[0].profile") {
		t.Errorf("unknown profile: %v", err)
	}
}

func TestParseRefusesNonsense(t *testing.T) {
	doc := func(pool string) []byte {
		return []byte("apiVersion: gpuplane.io/v1alpha1\nkind: Fleet\nspec:\n  nodePools:\n  - " + pool + "\n")
	}
	for name, tc := range map[string]struct{ pool, want string }{
		"count 1e7":        {"{name: a, profile: hgx-h100, count: 10000000}", "count"},
		"upper-case name":  {"{name: H100_Pool, profile: hgx-h100, count: 1}", "name"},
		"bad label key":    {"{name: a, profile: hgx-h100, count: 1, labels: {'bad key!': x}}", "labels"},
		"bad label value":  {"{name: a, profile: hgx-h100, count: 1, labels: {k: 'not a value!'}}", "labels[k]"},
		"negative gpus":    {"{name: a, profile: hgx-h100, count: 1, gpus: -3}", "gpus"},
		"down node absent": {"{name: a, profile: gb200-nvl72, count: 2, nvlinkDown: {a-2: [0]}}", `nvlinkDown: node "a-2" is not in this pool; its nodes are a-0 to a-1`},
		"down node padded": {"{name: a, profile: gb200-nvl72, count: 2, nvlinkDown: {a-01: [0]}}", `nvlinkDown: node "a-01" is not in this pool`},
	} {
		if _, err := Parse(doc(tc.pool)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %s", name, err, tc.want)
		}
	}
	two := append(doc("{name: a, profile: hgx-h100, count: 1}"), []byte("---\napiVersion: gpuplane.io/v1alpha1\n")...)
	if _, err := Parse(two); err == nil || !strings.Contains(err.Error(), "YAML documents") {
		t.Errorf("two documents: %v", err)
	}
}
