package configure

import "math"

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
		d.bound = "load"
		if s.r.Concurrency > 0 {
			d.users = s.r.Concurrency
			d.nd = ceilDiv(d.users, d.decPt.Concurrency)
			d.rate = float64(d.users) / (pre.points[0].TTFTms + d.transfer + float64(s.r.OSL-1)*d.decPt.ITLms) * 1e3
		} else {
			d.rate = s.r.RequestRate
			d.nd = int(math.Ceil(d.rate / d.decPt.RequestsPerS))
		}
		d.np = int(math.Ceil(d.rate / d.preCap))
		if s.r.Concurrency == 0 {
			d.users = max(1, int(math.Ceil(d.rate*d.analyticE2E(s.r.OSL)/1e3)))
		}
		d.transfer = transferMs(s.r.ISL, pre, dec, d.sameDomain())
		s.scored++
		s.settleLoad(d)
	} else if d = s.sizeDisagg(pre, dec); d != nil {
		s.settleMax(d)
	}
	if d != nil && d.res != nil {
		s.pinned = d
	}
}
