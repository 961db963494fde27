package nvmldiscovery

import (
	"fmt"

	nvdev "github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Partitioner creates and destroys MIG partitions through NVML for dynamic
// MIG: a GPU instance at the allocated placement and one compute instance
// spanning it.
type Partitioner struct {
	Lib nvml.Interface
}

// Create makes profile at placement start on the GPU and returns the MIG UUID.
func (p *Partitioner) Create(gpuUUID, profile string, start int) (string, error) {
	dev, info, err := p.lookup(gpuUUID, profile)
	if err != nil {
		return "", err
	}
	gi, ret := dev.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: uint32(start), Size: uint32(placementSize(dev, info, start))})
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("create GPU instance: %v", ret)
	}
	ci, ok := ciProfileBySlices[info.SliceCount]
	if !ok {
		_ = gi.Destroy()
		return "", fmt.Errorf("no compute instance profile spans %d slices", info.SliceCount)
	}
	ciInfo, ret := gi.GetComputeInstanceProfileInfo(ci, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	if ret != nvml.SUCCESS {
		_ = gi.Destroy()
		return "", fmt.Errorf("compute instance profile: %v", ret)
	}
	if _, ret := gi.CreateComputeInstance(&ciInfo); ret != nvml.SUCCESS {
		_ = gi.Destroy()
		return "", fmt.Errorf("create compute instance: %v", ret)
	}
	gii, ret := gi.GetInfo()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("GPU instance info: %v", ret)
	}
	return migUUID(dev, int(gii.Id))
}

// Destroy removes the partition at placement start; one that is gone is not an error.
func (p *Partitioner) Destroy(gpuUUID, profile string, start int) error {
	dev, info, err := p.lookup(gpuUUID, profile)
	if err != nil {
		return err
	}
	gis, ret := dev.GetGpuInstances(&info)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("GPU instances: %v", ret)
	}
	for _, gi := range gis {
		gii, ret := gi.GetInfo()
		if ret != nvml.SUCCESS || int(gii.Placement.Start) != start {
			continue
		}
		for id := range nvml.COMPUTE_INSTANCE_PROFILE_COUNT {
			ciInfo, ret := gi.GetComputeInstanceProfileInfo(id, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
			if ret != nvml.SUCCESS {
				continue
			}
			cis, _ := gi.GetComputeInstances(&ciInfo)
			for _, ci := range cis {
				if ret := ci.Destroy(); ret != nvml.SUCCESS {
					return fmt.Errorf("destroy compute instance: %v", ret)
				}
			}
		}
		if ret := gi.Destroy(); ret != nvml.SUCCESS {
			return fmt.Errorf("destroy GPU instance: %v", ret)
		}
	}
	return nil
}

func (p *Partitioner) lookup(gpuUUID, profile string) (nvml.Device, nvml.GpuInstanceProfileInfo, error) {
	dev, ret := p.Lib.DeviceGetHandleByUUID(gpuUUID)
	if ret != nvml.SUCCESS {
		return nil, nvml.GpuInstanceProfileInfo{}, fmt.Errorf("GPU %s: %v", gpuUUID, ret)
	}
	mem, ret := dev.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return nil, nvml.GpuInstanceProfileInfo{}, fmt.Errorf("GPU %s memory: %v", gpuUUID, ret)
	}
	lib := nvdev.New(nil)
	for id := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := dev.GetGpuInstanceProfileInfo(id)
		if ret != nvml.SUCCESS {
			continue
		}
		ci, ok := ciProfileBySlices[info.SliceCount]
		if !ok {
			continue
		}
		mp, err := lib.NewMigProfile(id, ci, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, info.MemorySizeMB, mem.Total)
		if err == nil && mp.String() == profile {
			return dev, info, nil
		}
	}
	return nil, nvml.GpuInstanceProfileInfo{}, fmt.Errorf("GPU %s has no MIG profile %s", gpuUUID, profile)
}

// placementSize is NVML's size of the placement at start.
func placementSize(dev nvml.Device, info nvml.GpuInstanceProfileInfo, start int) int {
	pls, ret := dev.GetGpuInstancePossiblePlacements(&info)
	if ret == nvml.SUCCESS {
		for _, pl := range pls {
			if int(pl.Start) == start {
				return int(pl.Size)
			}
		}
	}
	return 0
}
