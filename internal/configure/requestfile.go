package configure

import (
	"bytes"
	"fmt"
	"sort"

	"sigs.k8s.io/yaml"

	"github.com/gpuplane/gpuplane/internal/strict"
)

// Kinds of request file.
const (
	ServingRequestAPIVersion = "gpuplane.io/v1alpha1"
	ServingRequestKind       = "ServingRequest"
	DGDRAPIVersion           = "nvidia.com/v1beta1"
	DGDRKind                 = "DynamoGraphDeploymentRequest"
)

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// servingRequest is gpuplane's own request kind.
type servingRequest struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Spec       struct {
		Model       string `json:"model"`
		Precision   string `json:"precision,omitempty"`
		KVPrecision string `json:"kvPrecision,omitempty"`
		Backend     string `json:"backend,omitempty"`
		// SpecTokens and SpecAccept: speculative decoding (Request).
		SpecTokens int     `json:"specTokens,omitempty"`
		SpecAccept float64 `json:"specAccept,omitempty"`
		Workload   struct {
			ISL         int     `json:"isl"`
			OSL         int     `json:"osl"`
			RequestRate float64 `json:"requestRate,omitempty"`
			Concurrency int     `json:"concurrency,omitempty"`
		} `json:"workload"`
		SLA      SLA `json:"sla"`
		Hardware struct {
			GPU         string      `json:"gpu,omitempty"`
			TotalGPUs   int         `json:"totalGpus,omitempty"`
			GPUsPerNode int         `json:"gpusPerNode,omitempty"`
			Pool        []PoolEntry `json:"pool,omitempty"`
		} `json:"hardware"`
		Budget struct {
			MaxGPUs        float64 `json:"maxGpus,omitempty"`
			MaxCostPerHour float64 `json:"maxCostPerHour,omitempty"`
		} `json:"budget,omitempty"`
		Pick  Pick     `json:"pick,omitempty"`
		Modes []string `json:"modes,omitempty"`
		// Confidence: the chance the SLA holds on the model's held-out spread.
		Confidence float64 `json:"confidence,omitempty"`
	} `json:"spec"`
}

// dgdr is the part of NVIDIA Dynamo's DynamoGraphDeploymentRequest
// (nvidia.com/v1beta1) a search uses, plus the fields it accepts without
// using; anything else is refused by name.
type dgdr struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Spec       struct {
		Model                  string `json:"model"`
		Backend                string `json:"backend,omitempty"`
		Image                  string `json:"image,omitempty"`
		RuntimeVersionOverride string `json:"runtimeVersionOverride,omitempty"`
		SearchStrategy         string `json:"searchStrategy,omitempty"`
		AutoApply              *bool  `json:"autoApply,omitempty"`
		Hardware               *struct {
			GPUSKU         string   `json:"gpuSku,omitempty"`
			VRAMMB         *float64 `json:"vramMb,omitempty"`
			TotalGPUs      *int     `json:"totalGpus,omitempty"`
			NumGPUsPerNode *int     `json:"numGpusPerNode,omitempty"`
			Interconnect   string   `json:"interconnect,omitempty"`
			RDMA           *bool    `json:"rdma,omitempty"`
		} `json:"hardware,omitempty"`
		Workload *struct {
			ISL         *int     `json:"isl,omitempty"`
			OSL         *int     `json:"osl,omitempty"`
			Concurrency *float64 `json:"concurrency,omitempty"`
			RequestRate *float64 `json:"requestRate,omitempty"`
		} `json:"workload,omitempty"`
		SLA *struct {
			TTFT             *float64 `json:"ttft,omitempty"`
			ITL              *float64 `json:"itl,omitempty"`
			E2ELatency       *float64 `json:"e2eLatency,omitempty"`
			OptimizationType string   `json:"optimizationType,omitempty"`
		} `json:"sla,omitempty"`
		ModelCache map[string]any `json:"modelCache,omitempty"`
		Overrides  map[string]any `json:"overrides,omitempty"`
		Features   map[string]any `json:"features,omitempty"`
	} `json:"spec"`
}

// File is a parsed request file: the request, the object's name and kind,
// and notes on fields that were accepted but do not change the search.
type File struct {
	Request Request
	Name    string
	Kind    string
	Notes   []string
	// VRAMMiB is a DGDR's spec.hardware.vramMb, checked by CheckHardware.
	VRAMMiB float64
}

// CheckHardware compares a DGDR's stated VRAM with the catalog's GPU, so a
// SKU name that does not match the cluster is caught before the search.
func (f *File) CheckHardware(env Env) error {
	if f.VRAMMiB == 0 || len(f.Request.Pool) == 0 {
		return nil
	}
	d, err := env.Catalog.Device(f.Request.Pool[0].Device, "")
	if err != nil {
		return fmt.Errorf("spec.hardware.gpuSku: %w", err)
	}
	have := d.MemoryGiB * 1024
	if f.VRAMMiB < 0.9*have || f.VRAMMiB > 1.1*have {
		return fmt.Errorf("spec.hardware.vramMb: %g MiB does not match %s (%.0f MiB in the catalog); fix gpuSku or vramMb", f.VRAMMiB, d.Name(), have)
	}
	return nil
}

// ParseFile reads a ServingRequest or a DynamoGraphDeploymentRequest.
func ParseFile(data []byte) (*File, error) {
	data = bytes.TrimSpace(data)
	var tm typeMeta
	if err := strict.Why(data, yaml.Unmarshal(data, &tm)); err != nil {
		return nil, fmt.Errorf("request file: %w", err)
	}
	switch {
	case tm.Kind == ServingRequestKind && tm.APIVersion == ServingRequestAPIVersion:
		return parseServingRequest(data, tm.Metadata.Name)
	case tm.Kind == DGDRKind && tm.APIVersion == DGDRAPIVersion:
		return parseDGDR(data, tm.Metadata.Name)
	case tm.Kind == DGDRKind:
		return nil, fmt.Errorf("request file: apiVersion %q: gpuplane reads DynamoGraphDeploymentRequest in %s", tm.APIVersion, DGDRAPIVersion)
	}
	return nil, fmt.Errorf("request file: apiVersion %q kind %q: want %s %s or %s %s",
		tm.APIVersion, tm.Kind, ServingRequestAPIVersion, ServingRequestKind, DGDRAPIVersion, DGDRKind)
}

// decodeStrict decodes data into v, naming an unknown field by its path.
func decodeStrict(kind string, data []byte, v any) error {
	if err := strict.SingleDocument(data); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	if err := strict.UnknownField(data, v); err != nil {
		return fmt.Errorf("%s: %w (see docs/CONFIGURE.md for the fields gpuplane reads)", kind, err)
	}
	if err := strict.Why(data, yaml.UnmarshalStrict(data, v)); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	return nil
}

func parseServingRequest(data []byte, name string) (*File, error) {
	var sr servingRequest
	if err := decodeStrict(ServingRequestKind, data, &sr); err != nil {
		return nil, err
	}
	s := sr.Spec
	r := Request{Model: s.Model, Precision: s.Precision, KVPrecision: s.KVPrecision, Backend: s.Backend,
		SpecTokens: s.SpecTokens, SpecAccept: s.SpecAccept, ISL: s.Workload.ISL, OSL: s.Workload.OSL, RequestRate: s.Workload.RequestRate, Concurrency: s.Workload.Concurrency,
		SLA: s.SLA, Pool: s.Hardware.Pool, MaxGPUs: s.Budget.MaxGPUs, MaxCostPerHour: s.Budget.MaxCostPerHour,
		Pick: s.Pick, Modes: s.Modes, Confidence: s.Confidence}
	h := s.Hardware
	switch {
	case h.GPU != "" && len(h.Pool) > 0:
		return nil, fmt.Errorf("spec.hardware: give gpu with totalGpus, or pool, not both")
	case h.GPU != "":
		if h.TotalGPUs < 1 {
			return nil, fmt.Errorf("spec.hardware.totalGpus: %d; give the number of %s GPUs (>= 1)", h.TotalGPUs, h.GPU)
		}
		r.Pool = []PoolEntry{{Device: h.GPU, Count: h.TotalGPUs, GPUsPerNode: h.GPUsPerNode}}
		r.DeviceField = "spec.hardware.gpu"
	case h.TotalGPUs > 0 || h.GPUsPerNode > 0:
		return nil, fmt.Errorf("spec.hardware.gpu: required with totalGpus/gpusPerNode")
	}
	if s.Workload.ISL == 0 || s.Workload.OSL == 0 {
		return nil, fmt.Errorf("spec.workload: isl %d and osl %d: both are required, the prompt and answer tokens of a request (>= 1)", s.Workload.ISL, s.Workload.OSL)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return &File{Request: r, Name: name, Kind: ServingRequestKind}, nil
}

// Dynamo's profiler defaults where a DGDR leaves a field out.
const (
	dgdrISL  = 4000
	dgdrOSL  = 1000
	dgdrTTFT = 2000.0
	dgdrITL  = 30.0
)

func parseDGDR(data []byte, name string) (*File, error) {
	var d dgdr
	if err := decodeStrict(DGDRKind, data, &d); err != nil {
		return nil, err
	}
	s := d.Spec
	f := &File{Name: name, Kind: DGDRKind}
	switch {
	case s.Model == "":
		return nil, fmt.Errorf("spec.model: required")
	case s.ModelCache != nil:
		return nil, fmt.Errorf("spec.modelCache: not supported by gpuplane configure (it locates weights for the deployment, not the search); remove it and add the volume to the emitted manifests")
	case s.Overrides != nil:
		return nil, fmt.Errorf("spec.overrides: not supported by gpuplane configure; remove it and edit the emitted DynamoGraphDeployment instead")
	case s.Features != nil:
		return nil, fmt.Errorf("spec.features: not supported by gpuplane configure (planner and router settings belong to the deployment); remove it")
	case s.Hardware == nil || s.Hardware.GPUSKU == "":
		return nil, fmt.Errorf("spec.hardware.gpuSku: required; gpuplane does not discover the cluster (e.g. gpuSku: h200_sxm)")
	case s.Hardware.TotalGPUs == nil || *s.Hardware.TotalGPUs < 1:
		return nil, fmt.Errorf("spec.hardware.totalGpus: required and >= 1; gpuplane does not discover the cluster")
	}
	r := Request{Model: s.Model, Backend: s.Backend, ISL: dgdrISL, OSL: dgdrOSL, SLA: SLA{TTFTms: dgdrTTFT, ITLms: dgdrITL}}
	switch s.Backend {
	case "", "auto":
		r.Backend = "vllm"
		f.Notes = append(f.Notes, "spec.backend: auto; searched with vllm")
	}
	h := s.Hardware
	pe := PoolEntry{Device: h.GPUSKU, Count: *h.TotalGPUs}
	if h.NumGPUsPerNode != nil {
		if *h.NumGPUsPerNode < 1 {
			return nil, fmt.Errorf("spec.hardware.numGpusPerNode: %d must be >= 1", *h.NumGPUsPerNode)
		}
		pe.GPUsPerNode = *h.NumGPUsPerNode
	}
	r.Pool = []PoolEntry{pe}
	r.DeviceField = "spec.hardware.gpuSku"
	if h.VRAMMB != nil {
		f.VRAMMiB = *h.VRAMMB
	}
	if h.Interconnect != "" || h.RDMA != nil {
		f.Notes = append(f.Notes, "spec.hardware.interconnect/rdma: the catalog's NVLink and network figures for the GPU are used")
	}
	if w := s.Workload; w != nil {
		if w.ISL != nil {
			r.ISL = *w.ISL
		}
		if w.OSL != nil {
			r.OSL = *w.OSL
		}
		if w.Concurrency != nil && w.RequestRate != nil {
			return nil, fmt.Errorf("spec.workload: concurrency and requestRate are mutually exclusive; give one")
		}
		if w.RequestRate != nil {
			r.RequestRate = *w.RequestRate
			r.Pick = LoadMatch
		}
		if w.Concurrency != nil {
			if *w.Concurrency < 1 || *w.Concurrency != float64(int(*w.Concurrency)) {
				return nil, fmt.Errorf("spec.workload.concurrency: %g must be a whole number >= 1", *w.Concurrency)
			}
			r.Concurrency = int(*w.Concurrency)
			r.Pick = LoadMatch
		}
	}
	if sl := s.SLA; sl != nil {
		if sl.TTFT != nil {
			r.SLA.TTFTms = *sl.TTFT
		}
		if sl.ITL != nil {
			r.SLA.ITLms = *sl.ITL
		}
		if sl.E2ELatency != nil {
			r.SLA.E2Ems = *sl.E2ELatency
			if sl.TTFT == nil && sl.ITL == nil {
				// An end-to-end target stands in for TTFT + ITL.
				r.SLA.TTFTms, r.SLA.ITLms = 0, 0
			}
		}
		switch sl.OptimizationType {
		case "", "throughput":
		case "latency":
			return nil, fmt.Errorf("spec.sla.optimizationType: latency is not supported; gpuplane maximises goodput within the SLO (use throughput, or tighten sla.itl)")
		default:
			return nil, fmt.Errorf("spec.sla.optimizationType: %q is not latency or throughput", sl.OptimizationType)
		}
	}
	for field, set := range map[string]bool{"spec.image": s.Image != "", "spec.runtimeVersionOverride": s.RuntimeVersionOverride != "",
		"spec.searchStrategy": s.SearchStrategy != "", "spec.autoApply": s.AutoApply != nil} {
		if set {
			f.Notes = append(f.Notes, field+": concerns Dynamo's profiling job or operator; no effect on gpuplane's search")
		}
	}
	sort.Strings(f.Notes)
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	f.Request = r
	return f, nil
}

// poolFile is the schema of a pool file: the device kinds a cluster offers.
type poolFile struct {
	Pool []PoolEntry `json:"pool"`
}

// ParsePool reads a pool file (pool: [{device, count, pricePerHour, gpusPerNode}]).
func ParsePool(data []byte) ([]PoolEntry, error) {
	var pf poolFile
	if err := decodeStrict("pool file", bytes.TrimSpace(data), &pf); err != nil {
		return nil, err
	}
	if len(pf.Pool) == 0 {
		return nil, fmt.Errorf("pool file: pool: no devices listed")
	}
	return pf.Pool, nil
}
