package inventory

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	mig := func(instances ...MIGInstance) *MIG {
		return &MIG{Enabled: true, MemorySlices: 8, ComputeSlices: 7, Instances: instances,
			Profiles: []MIGProfile{{Name: "3g.40gb", ComputeSlices: 3, MemorySlices: 4, Placements: []int{0, 4}}}}
	}
	gpu := func(uuid string, idx int, m *MIG) GPU {
		return GPU{UUID: uuid, Index: idx, MemoryBytes: 80 << 30, ProductName: "NVIDIA H100 80GB HBM3", MIG: m}
	}
	cases := []struct {
		name string
		n    Node
		want string
	}{
		{"ok", Node{GPUs: []GPU{gpu("a", 0, mig(MIGInstance{UUID: "m0", Profile: "3g.40gb", Start: 0}, MIGInstance{UUID: "m1", Profile: "3g.40gb", Start: 4}))}}, ""},
		{"no uuid", Node{GPUs: []GPU{gpu("", 0, nil)}}, "gpus[0].uuid: empty"},
		{"duplicate", Node{GPUs: []GPU{gpu("a", 0, nil), gpu("a", 1, nil)}}, "duplicate uuid"},
		{"no memory", Node{GPUs: []GPU{{UUID: "a"}}}, "memoryBytes: 0"},
		{"unknown profile", Node{GPUs: []GPU{gpu("a", 0, mig(MIGInstance{Profile: "2g.20gb"}))}}, `"2g.20gb" is not a profile`},
		{"overlap", Node{GPUs: []GPU{gpu("a", 0, mig(MIGInstance{Profile: "3g.40gb", Start: 0}, MIGInstance{Profile: "3g.40gb", Start: 2}))}}, "overlaps"},
		{"off the GPU", Node{GPUs: []GPU{gpu("a", 0, mig(MIGInstance{Profile: "3g.40gb", Start: 6}))}}, "leaves the GPU"},
	}
	for _, tc := range cases {
		err := tc.n.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestDNSLabel(t *testing.T) {
	for in, want := range map[string]string{"1g.10gb+me": "1g-10gb-me", "3g.40gb": "3g-40gb", "7g.94gb": "7g-94gb"} {
		if got := DNSLabel(in); got != want {
			t.Errorf("DNSLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
