package nvmldiscovery

import (
	"context"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/dra/inventory"
)

// bare fills the device functions go-nvml's mock server leaves unset: a
// bare-metal GPU with no MIG devices yet.
func bare(s *server.Server) {
	for _, d := range s.Devices {
		md := d.(*server.Device)
		md.GetVirtualizationModeFunc = func() (nvml.GpuVirtualizationMode, nvml.Return) {
			return nvml.GPU_VIRTUALIZATION_MODE_NONE, nvml.SUCCESS
		}
		md.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 0, nvml.SUCCESS }
	}
}

func TestDiscoverDGXH100(t *testing.T) {
	s := dgxh100.New()
	bare(s)
	inv, err := (&Discoverer{Lib: s, Catalog: catalog.MustDefault()}).Discover()
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(inv.GPUs))
	}
	if inv.DriverVersion != "550.54.15" || inv.CUDADriverVersion != "12.4.0" {
		t.Errorf("versions %q %q", inv.DriverVersion, inv.CUDADriverVersion)
	}
	g := inv.GPUs[0]
	if g.ProductName != "NVIDIA H100 80GB HBM3" || g.Architecture != "Hopper" || g.CUDAComputeCapability != "9.0" || g.Multiprocessors != 132 {
		t.Errorf("gpu 0: %+v", g)
	}
	if g.MIG == nil || g.MIG.Enabled || g.MIG.MemorySlices != 8 || g.MIG.ComputeSlices != 7 {
		t.Fatalf("mig: %+v", g.MIG)
	}
	// Placements as the mock reports them; memory slices from each profile's share of memory.
	want := map[string]struct{ starts, mem int }{"1g.10gb": {7, 1}, "2g.20gb": {3, 2}, "3g.40gb": {2, 4}, "4g.40gb": {1, 4}, "7g.80gb": {1, 8}}
	for name, w := range want {
		p, ok := g.MIG.Profile(name)
		if !ok {
			t.Errorf("profile %s missing; have %+v", name, g.MIG.Profiles)
			continue
		}
		if len(p.Placements) != w.starts || p.MemorySlices != w.mem {
			t.Errorf("%s: placements %v, memory slices %d; want %d placements, %d slices", name, p.Placements, p.MemorySlices, w.starts, w.mem)
		}
	}
}

// TestDiscoverStaticMIG creates two GPU instances on the mock and expects
// them as instances with the UUIDs of their MIG devices.
func TestDiscoverStaticMIG(t *testing.T) {
	s := dgxa100.New()
	bare(s)
	d0 := s.Devices[0].(*server.Device)
	d0.SetMigMode(nvml.DEVICE_MIG_ENABLE)
	info, _ := d0.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_3_SLICE)
	var migs []nvml.Device
	for _, start := range []uint32{0, 4} {
		gi, ret := d0.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: start, Size: 4})
		if ret != nvml.SUCCESS {
			t.Fatal(ret)
		}
		gii, _ := gi.GetInfo()
		id, uuid := int(gii.Id), "MIG-test-"+string(rune('a'+start))
		migs = append(migs, &mock.Device{
			GetGpuInstanceIdFunc: func() (int, nvml.Return) { return id, nvml.SUCCESS },
			GetUUIDFunc:          func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		})
	}
	d0.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d0.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i < len(migs) {
			return migs[i], nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	inv, err := (&Discoverer{Lib: s}).Discover()
	if err != nil {
		t.Fatal(err)
	}
	m := inv.GPUs[0].MIG
	if !m.Enabled || len(m.Instances) != 2 {
		t.Fatalf("mig %+v", m)
	}
	for i, in := range m.Instances {
		if in.Profile != "3g.20gb" || in.Start != 4*i || in.UUID != "MIG-test-"+string(rune('a'+4*i)) {
			t.Errorf("instance %d: %+v", i, in)
		}
	}
	if inv.GPUs[1].MIG.Enabled {
		t.Error("gpu 1 has MIG enabled")
	}
}

func TestVGPUGuest(t *testing.T) {
	d := &Discoverer{Catalog: catalog.MustDefault()}
	for name, want := range map[string]string{"NVIDIA A10-8Q": "1/3", "NVIDIA A10-4Q": "1/6", "NVIDIA A10-12Q": "1/2", "NVIDIA A10-24Q": "1"} {
		if v := d.vgpu(name); v.Fraction != want || v.Profile != name {
			t.Errorf("%s: %+v, want fraction %s", name, v, want)
		}
	}
}

func TestSemver(t *testing.T) {
	for in, want := range map[string]string{"580.95.05": "580.95.5", "550.54": "550.54.0", "570.00.1": "570.0.1"} {
		if got := inventory.Semver(in); got != want {
			t.Errorf("semver(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPartitionerCreatesAndDestroys(t *testing.T) {
	s := dgxh100.New()
	bare(s)
	d0 := s.Devices[0].(*server.Device)
	uuid, _ := d0.GetUUID()
	// MIG device handles for what exists: one per GPU instance.
	d0.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d0.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		n := 0
		for gi := range d0.GpuInstances {
			if n == i {
				id := int(gi.Info.Id)
				return &mock.Device{
					GetGpuInstanceIdFunc: func() (int, nvml.Return) { return id, nvml.SUCCESS },
					GetUUIDFunc:          func() (string, nvml.Return) { return "MIG-gi-" + string(rune('0'+id)), nvml.SUCCESS },
				}, nvml.SUCCESS
			}
			n++
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	p := &Partitioner{Lib: s}
	mig, err := p.Create(uuid, "3g.40gb", 4)
	if err != nil {
		t.Fatal(err)
	}
	if mig != "MIG-gi-0" || len(d0.GpuInstances) != 1 {
		t.Fatalf("created %q, %d instances", mig, len(d0.GpuInstances))
	}
	for gi := range d0.GpuInstances {
		if gi.Info.Placement.Start != 4 || len(gi.ComputeInstances) != 1 {
			t.Errorf("instance %+v with %d compute instances", gi.Info.Placement, len(gi.ComputeInstances))
		}
	}
	if err := p.Destroy(uuid, "3g.40gb", 4); err != nil {
		t.Fatal(err)
	}
	if len(d0.GpuInstances) != 0 {
		t.Errorf("%d GPU instances left", len(d0.GpuInstances))
	}
	if _, err := p.Create(uuid, "5g.50gb", 0); err == nil {
		t.Error("unknown profile accepted")
	}
}

func TestHealthReportsCriticalXIDs(t *testing.T) {
	s := dgxh100.New()
	bare(s)
	registered := 0
	for _, d := range s.Devices {
		d.(*server.Device).RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { registered++; return nvml.SUCCESS }
	}
	events := make(chan nvml.EventData, 4)
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
				select {
				case e := <-events:
					return e, nvml.SUCCESS
				default:
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
			},
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := (&Health{Lib: s, WaitMs: 1}).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if registered != 8 {
		t.Errorf("registered on %d GPUs", registered)
	}
	events <- nvml.EventData{Device: s.Devices[2], EventType: nvml.EventTypeXidCriticalError, EventData: 13} // application error
	events <- nvml.EventData{Device: s.Devices[5], EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	ev := <-ch
	want, _ := s.Devices[5].GetUUID()
	if ev.UUID != want || ev.Healthy || ev.Reason != "XID 79" {
		t.Errorf("event %+v, want GPU 5 unhealthy with XID 79", ev)
	}
}
