package perf

// KVTransferTime is the time to hand one prompt's KV cache from a prefill
// worker to a decode worker: the backend's fixed hand-off cost, then the
// bytes over NVLink when both are in one node or NVLink domain, over the
// scale-out network otherwise. Each rank sends its shard in parallel, so
// the narrower of the two groups sets the stream count.
func KVTransferTime(isl int, prefill, decode *Worker, sameDomain bool) float64 {
	return HandoffFixed(prefill) + kvBytesTime(isl, prefill, decode, sameDomain)
}

// HandoffFixed is the backend's fixed hand-off cost per request in
// seconds, the part of KVTransferTime that does not move bytes.
func HandoffFixed(prefill *Worker) float64 { return prefill.be.HandoffMs * 1e-3 }

func kvBytesTime(isl int, prefill, decode *Worker, sameDomain bool) float64 {
	m := prefill.cfg.Model
	bytes := float64(isl) * m.KVBytesPerToken(prefill.cfg.KV)
	streams := float64(min(prefill.cfg.GPUs(), decode.cfg.GPUs()))
	c := prefill.comm
	if sameDomain && prefill.cfg.Device.GPU.HasNVLink() && prefill.cfg.Device.Whole() && decode.cfg.Device.Whole() {
		return c.P2PLatencyUs*1e-6 + bytes/(streams*prefill.cfg.Device.GPU.NVLinkGBpsPerDir*1e9*c.AllReduceBusEfficiency)
	}
	return c.NetworkLatencyUs*1e-6 + bytes/(streams*c.NetworkGBps*1e9)
}
