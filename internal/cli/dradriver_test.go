package cli

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

func TestDRADriverProfiles(t *testing.T) {
	out, _, err := run(t, "dra-driver", "profiles")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "dra-profiles.txt", out)
}

func TestDRADriverClasses(t *testing.T) {
	out, _, err := run(t, "dra-driver", "classes", "--extended-resource")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "dra-classes.yaml", out)
}

func TestDRADriverFleetDryRun(t *testing.T) {
	out, _, err := run(t, "dra-driver", "fleet", "-f", "../../examples/fleet.yaml", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.TrimPrefix(out, "---\n"), "\n---\n")
	devices, counters := 0, 0
	for _, d := range docs {
		var s resourceapi.ResourceSlice
		if err := yaml.UnmarshalStrict([]byte(d), &s); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		devices += len(s.Spec.Devices)
		counters += len(s.Spec.SharedCounters)
	}
	// 4 vGPUs + 8 H100 with 25 partitions each + 8 shared H200 + 8 GB200.
	if devices != 4+8*26+8+8 || counters != 8 {
		t.Errorf("%d devices, %d counter sets in %d slices", devices, counters, len(docs))
	}
	if _, _, err := run(t, "dra-driver", "fleet", "-f", "testdata/nope.yaml", "--dry-run"); err == nil || !strings.Contains(err.Error(), "-f") {
		t.Errorf("missing file: %v", err)
	}
}
