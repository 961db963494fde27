package configure

// autoscale picks the best decode engine (output tokens/s per GPU, or per
// unit of price, inside the ITL) and then the best prefill engine for it
// (prompt tokens/s per GPU inside the TTFT left after the KV hand-off),
// each on its own: a planner scales the two pools independently, so the
// best pair is not the best balanced deployment but the best two units.
func (s *search) autoscale() {
	var dec *engine
	var decKey float64
	for _, d := range s.byRole("decode") {
		pt, ok := d.best(s.r)
		if !ok {
			continue
		}
		if k := s.efficiency(pt.RequestsPerS*float64(s.r.OSL), d.gpus(), d.cost()); dec == nil || k > decKey {
			dec, decKey = d, k
		}
	}
	if dec == nil {
		return
	}
	var pre *engine
	var preKey float64
	for _, p := range s.byRole("prefill") {
		d := s.pair(p, dec)
		if d == nil {
			continue
		}
		if k := s.efficiency(d.preCap*float64(s.r.ISL), p.gpus(), p.cost()); pre == nil || k > preKey {
			pre, preKey = p, k
		}
	}
	if pre == nil {
		return
	}
	var d *deployment
	if s.r.RequestRate > 0 || s.r.Concurrency > 0 {
		d = s.pair(pre, dec)
		s.sizeForLoad(d)
		s.scored++
		s.settleLoad(d)
	} else if d = s.sizeDisagg(pre, dec); d != nil {
		s.settleMax(d)
	}
	if d != nil && d.res != nil {
		s.pinned = d
	}
}
