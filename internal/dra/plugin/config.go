package plugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsjson "sigs.k8s.io/json"
)

// ConfigAPIVersion and ConfigKind identify gpuplane's opaque device configuration.
const (
	ConfigAPIVersion = "gpu.gpuplane.io/v1alpha1"
	ConfigKind       = "GpuConfig"
)

// GpuConfig is the opaque per-claim (or per-class) configuration: how the
// containers of a claim share its GPUs.
type GpuConfig struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Sharing    *Sharing `json:"sharing,omitempty"`
}

// Sharing strategies.
const (
	TimeSlicing = "TimeSlicing"
	MPS         = "MPS"
)

// Sharing says how processes share a device.
type Sharing struct {
	Strategy    string             `json:"strategy"`
	TimeSlicing *TimeSlicingConfig `json:"timeSlicing,omitempty"`
	MPS         *MPSConfig         `json:"mps,omitempty"`
}

// TimeSlicingConfig sets the time-slice length.
type TimeSlicingConfig struct {
	// Interval is Default, Short, Medium or Long.
	Interval string `json:"interval"`
}

// MPSConfig caps each client of an MPS daemon.
type MPSConfig struct {
	DefaultActiveThreadPercentage  *int               `json:"defaultActiveThreadPercentage,omitempty"`
	DefaultPinnedDeviceMemoryLimit *resource.Quantity `json:"defaultPinnedDeviceMemoryLimit,omitempty"`
}

var intervals = []string{"Default", "Short", "Medium", "Long"}

// DecodeConfig decodes and checks one opaque configuration strictly: an
// unknown or misspelled field is an error that names its path.
func DecodeConfig(raw []byte) (*GpuConfig, error) {
	var c GpuConfig
	strict, err := sigsjson.UnmarshalStrict(raw, &c)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", ConfigKind, err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("decode %s: %s (fields: sharing.strategy, sharing.timeSlicing.interval, sharing.mps.defaultActiveThreadPercentage, sharing.mps.defaultPinnedDeviceMemoryLimit)", ConfigKind, strings.Join(msgs, "; "))
	}
	if c.APIVersion != ConfigAPIVersion || c.Kind != ConfigKind {
		return nil, fmt.Errorf("apiVersion/kind: %q/%q, want %s/%s", c.APIVersion, c.Kind, ConfigAPIVersion, ConfigKind)
	}
	return &c, c.validate()
}

func (c *GpuConfig) validate() error {
	s := c.Sharing
	if s == nil {
		return nil
	}
	switch s.Strategy {
	case TimeSlicing:
		if s.MPS != nil {
			return errors.New("sharing.mps: set with strategy TimeSlicing; use strategy MPS or drop it")
		}
		if s.TimeSlicing != nil && !slices.Contains(intervals, s.TimeSlicing.Interval) {
			return fmt.Errorf("sharing.timeSlicing.interval: %q, want one of %s", s.TimeSlicing.Interval, strings.Join(intervals, ", "))
		}
	case MPS:
		if s.TimeSlicing != nil {
			return errors.New("sharing.timeSlicing: set with strategy MPS; use strategy TimeSlicing or drop it")
		}
		if m := s.MPS; m != nil {
			if p := m.DefaultActiveThreadPercentage; p != nil && (*p < 1 || *p > 100) {
				return fmt.Errorf("sharing.mps.defaultActiveThreadPercentage: %d, want 1..100", *p)
			}
			if q := m.DefaultPinnedDeviceMemoryLimit; q != nil && q.Sign() <= 0 {
				return fmt.Errorf("sharing.mps.defaultPinnedDeviceMemoryLimit: %s, want > 0", q.String())
			}
		}
	default:
		return fmt.Errorf("sharing.strategy: %q, want %s or %s", s.Strategy, TimeSlicing, MPS)
	}
	return nil
}

// configFor returns the configuration that applies to request: the class's
// then the claim's, the later overriding the earlier, as the API orders them.
func configFor(driver string, cfgs []resourceapi.DeviceAllocationConfiguration, request string) (*GpuConfig, error) {
	var out *GpuConfig
	for i, c := range cfgs {
		if c.Opaque == nil || c.Opaque.Driver != driver {
			continue
		}
		if len(c.Requests) > 0 && !slices.Contains(c.Requests, request) && !slices.Contains(c.Requests, strings.SplitN(request, "/", 2)[0]) {
			continue
		}
		cfg, err := DecodeConfig(c.Opaque.Parameters.Raw)
		if err != nil {
			return nil, fmt.Errorf("status.allocation.devices.config[%d] (from %s): %w", i, c.Source, err)
		}
		out = cfg
	}
	return out, nil
}
