// Package nvmldiscovery reads a real node's GPUs through NVML (go-nvml,
// with go-nvlib's device helpers): whole GPUs, MIG profiles with their
// placements, existing MIG instances, vGPU guests and NVLink fabric.
package nvmldiscovery

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	nvdev "github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
)

// Discoverer reads the node through an NVML library: nvml.New() on a GPU
// node, one of go-nvml's mock servers in tests.
type Discoverer struct {
	Lib nvml.Interface
	// Catalog supplies facts NVML does not report for a whole GPU (its SM
	// count); may be nil.
	Catalog *catalog.Catalog
	// Fabric reads the NVLink fabric (clique) of each GPU; on for GB200-class nodes.
	Fabric bool
}

// Discover initialises NVML, reads every GPU and shuts NVML down again.
func (d *Discoverer) Discover() (*inventory.Node, error) {
	if ret := d.Lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml init: %v (is the NVIDIA driver installed and the library mounted?)", ret)
	}
	defer d.Lib.Shutdown()
	node := &inventory.Node{}
	if v, ret := d.Lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		node.DriverVersion = inventory.Semver(v)
	}
	if v, ret := d.Lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		node.CUDADriverVersion = fmt.Sprintf("%d.%d.0", v/1000, v%1000/10)
	}
	devs, err := nvdev.New(d.Lib).GetDevices()
	if err != nil {
		return nil, fmt.Errorf("nvml devices: %w", err)
	}
	for i, dev := range devs {
		g, err := d.gpu(i, dev)
		if err != nil {
			return nil, fmt.Errorf("gpu %d: %w", i, err)
		}
		node.GPUs = append(node.GPUs, g)
	}
	return node, node.Validate()
}

func (d *Discoverer) gpu(i int, dev nvdev.Device) (inventory.GPU, error) {
	var g inventory.GPU
	var ret nvml.Return
	g.Index = i
	if idx, ret := dev.GetIndex(); ret == nvml.SUCCESS {
		g.Index = idx
	}
	if g.UUID, ret = dev.GetUUID(); ret != nvml.SUCCESS {
		return g, fmt.Errorf("uuid: %v", ret)
	}
	if g.ProductName, ret = dev.GetName(); ret != nvml.SUCCESS {
		return g, fmt.Errorf("name: %v", ret)
	}
	var err error
	if g.Brand, err = dev.GetBrandAsString(); err != nil {
		return g, fmt.Errorf("brand: %w", err)
	}
	if g.Architecture, err = dev.GetArchitectureAsString(); err != nil {
		return g, fmt.Errorf("architecture: %w", err)
	}
	if g.CUDAComputeCapability, err = dev.GetCudaComputeCapabilityAsString(); err != nil {
		return g, fmt.Errorf("compute capability: %w", err)
	}
	mem, ret := dev.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return g, fmt.Errorf("memory info: %v", ret)
	}
	g.MemoryBytes = int64(mem.Total)
	if bus, err := dev.GetPCIBusID(); err == nil && bus != "" {
		g.PCIBusID = strings.ToLower(bus)
		g.PCIeRoot = pcieRoot(g.PCIBusID)
	}
	if d.Catalog != nil {
		for _, cg := range d.Catalog.GPUs {
			if strings.EqualFold(cg.ProductName, g.ProductName) {
				g.Multiprocessors = cg.SMCount
			}
		}
	}
	if mode, ret := dev.GetVirtualizationMode(); ret == nvml.SUCCESS && mode == nvml.GPU_VIRTUALIZATION_MODE_VGPU {
		g.VGPU = d.vgpu(g.ProductName)
	}
	capable, err := dev.IsMigCapable()
	if err != nil {
		return g, err
	}
	if capable && g.VGPU == nil {
		if g.MIG, err = migOf(dev, mem.Total); err != nil {
			return g, fmt.Errorf("mig: %w", err)
		}
	}
	if d.Fabric {
		fi, ret := dev.GetGpuFabricInfo()
		if ret != nvml.SUCCESS {
			return g, fmt.Errorf("nvlink fabric info: %v", ret)
		}
		if fi.State == nvml.GPU_FABRIC_STATE_COMPLETED && fi.ClusterUuid != [16]uint8{} {
			u := fi.ClusterUuid
			g.NVLink = &inventory.NVLink{CliqueID: int(fi.CliqueId),
				ClusterUUID: fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])}
		}
	}
	return g, nil
}

// vgpu reads the share from the vGPU type's framebuffer against the physical
// GPU's nominal size: "NVIDIA A10-8Q" on a 24 GB A10 is 1/3.
func (d *Discoverer) vgpu(name string) *inventory.VGPU {
	v := &inventory.VGPU{Profile: name}
	base, fb, ok := strings.Cut(strings.TrimPrefix(name, "NVIDIA "), "-")
	if !ok {
		return v
	}
	var gb int
	if _, err := fmt.Sscanf(fb, "%d", &gb); err != nil || gb <= 0 {
		return v
	}
	if d.Catalog != nil {
		for _, cg := range d.Catalog.GPUs {
			if strings.EqualFold(strings.TrimPrefix(cg.ProductName, "NVIDIA "), base) {
				whole := int(cg.MemoryGiB + 1.5) // nominal GB of the physical GPU (22.5 GiB usable on a 24 GB A10)
				v.Fraction = fraction(gb, whole)
			}
		}
	}
	return v
}

func fraction(n, d int) string {
	a, b := n, d
	for b != 0 {
		a, b = b, a%b
	}
	if n == d {
		return "1"
	}
	return fmt.Sprintf("%d/%d", n/a, d/a)
}

// ciProfileBySlices maps a GPU instance's compute slices to the compute
// instance profile that spans it.
var ciProfileBySlices = map[uint32]int{
	1: nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, 2: nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE,
	3: nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 4: nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE,
	6: nvml.COMPUTE_INSTANCE_PROFILE_6_SLICE, 7: nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE,
	8: nvml.COMPUTE_INSTANCE_PROFILE_8_SLICE,
}

func migOf(dev nvdev.Device, total uint64) (*inventory.MIG, error) {
	cur, _, ret := dev.GetMigMode()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("mig mode: %v", ret)
	}
	m := &inventory.MIG{Enabled: cur == nvml.DEVICE_MIG_ENABLE}
	lib := nvdev.New(nil)
	for id := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := dev.GetGpuInstanceProfileInfo(id)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("profile %d: %v", id, ret)
		}
		ci, ok := ciProfileBySlices[info.SliceCount]
		if !ok {
			continue
		}
		mp, err := lib.NewMigProfile(id, ci, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, info.MemorySizeMB, total)
		if err != nil {
			return nil, fmt.Errorf("profile %d: %w", id, err)
		}
		placements, ret := dev.GetGpuInstancePossiblePlacements(&info)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("placements of %s: %v", mp, ret)
		}
		p := inventory.MIGProfile{Name: mp.String(), ComputeSlices: int(info.SliceCount),
			MemoryBytes: int64(info.MemorySizeMB) << 20, Multiprocessors: int(info.MultiprocessorCount)}
		for _, pl := range placements {
			p.Placements = append(p.Placements, int(pl.Start))
			p.MemorySlices = max(p.MemorySlices, int(pl.Size))
		}
		m.ComputeSlices = max(m.ComputeSlices, p.ComputeSlices)
		if len(p.Placements) == 0 {
			continue
		}
		m.Profiles = append(m.Profiles, p)
		if !m.Enabled {
			continue
		}
		gis, ret := dev.GetGpuInstances(&info)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("instances of %s: %v", mp, ret)
		}
		for _, gi := range gis {
			gii, ret := gi.GetInfo()
			if ret != nvml.SUCCESS {
				return nil, fmt.Errorf("instance of %s: %v", mp, ret)
			}
			uuid, err := migUUID(dev, int(gii.Id))
			if err != nil {
				return nil, err
			}
			m.Instances = append(m.Instances, inventory.MIGInstance{UUID: uuid, Profile: p.Name, Start: int(gii.Placement.Start)})
		}
	}
	memorySlices(m)
	sort.Slice(m.Instances, func(i, j int) bool { return m.Instances[i].Start < m.Instances[j].Start })
	return m, nil
}

// memorySlices sets each profile's memory slices from its share of the
// largest profile's memory: GPUs with 7 compute slices have 8 memory slices
// (A100, H100, H200, B200), others one per compute slice (A30). Placements
// keep NVML's start positions.
func memorySlices(m *inventory.MIG) {
	m.MemorySlices = m.ComputeSlices
	if m.ComputeSlices == 7 {
		m.MemorySlices = 8
	}
	var largest int64
	for _, p := range m.Profiles {
		largest = max(largest, p.MemoryBytes)
	}
	for i, p := range m.Profiles {
		n := int(math.Round(float64(p.MemoryBytes) / float64(largest) * float64(m.MemorySlices)))
		n = max(n, 1)
		m.Profiles[i].MemorySlices = n
		// Drop placements that would leave the GPU.
		var keep []int
		for _, s := range p.Placements {
			if s+n <= m.MemorySlices {
				keep = append(keep, s)
			}
		}
		m.Profiles[i].Placements = keep
	}
}

// migUUID finds the MIG device of GPU instance gi.
func migUUID(dev nvml.Device, gi int) (string, error) {
	n, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("mig device count: %v", ret)
	}
	for i := range n {
		md, ret := dev.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return "", fmt.Errorf("mig device %d: %v", i, ret)
		}
		id, ret := md.GetGpuInstanceId()
		if ret != nvml.SUCCESS || id != gi {
			continue
		}
		u, ret := md.GetUUID()
		if ret != nvml.SUCCESS {
			return "", fmt.Errorf("mig device %d uuid: %v", i, ret)
		}
		return u, nil
	}
	return "", errors.New("gpu instance " + fmt.Sprint(gi) + " has no MIG device (no compute instance created?)")
}

// pcieRoot is the root complex of a PCI address "0000:18:00.0": "pci0000:18"
// is the best NVML alone can tell; sysfs resolves the real root on a node.
func pcieRoot(bus string) string {
	dom, rest, ok := strings.Cut(bus, ":")
	if !ok {
		return ""
	}
	b, _, _ := strings.Cut(rest, ":")
	return "pci" + dom + ":" + b
}
