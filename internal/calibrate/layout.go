package calibrate

import "strconv"

// aggLayout is an aggregated run's parallel layout and the number of users
// its benchmark ran.
type aggLayout struct {
	TP, PP, DP, EP int
	Concurrency    int
}

// readAggLayout reads an aggregated row's layout, as LoadSilicon and the
// decision grids both see it. A row that contradicts itself is given a
// reason to be left out.
//
// batch_size is per attention-DP rank: the benchmark ran batch_size x dp
// users, as the source's silicon_concurrency (or the id's _c<N>) says for
// all but nine rows. Those nine state another count, and neither count
// explains both of their latencies, so they are left out with the reason.
//
// An engine runs the experts of a worker over its own GPUs: moe_tp x
// moe_ep is the worker's tp (or, under TensorRT-LLM's attention DP, its
// dp). Rows of the 2026-04-06 campaign and the dump record tp or dp as
// that product on single-node systems (tp 64 with moe 8 x 8 on 8-GPU
// B200 and H200 nodes): exported from runs of moe_ep GPUs. Many of them
// repeat, value for value, a run of the same campaign recorded as tp (or
// dp) = moe_ep = 8 or 4 with moe_tp 1, and their ids name that run
// (tp8_ep8). A product larger than the system's NVLink domain (t.domain)
// is read as that run, with the same users; within the domain the same
// product can be a real layout (tp 4 over moe 2 x 2), and stays.
func readAggLayout(t *csvTable, row []string) (aggLayout, string, error) {
	var l aggLayout
	var err error
	geti := func(col string) int {
		v, e := t.int(row, col)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	bs := geti("batch_size")
	l.TP, l.PP, l.DP = geti("tp_size"), geti("pp_size"), geti("attention_dp_size")
	mtp, mep := geti("moe_tp_size"), geti("moe_ep_size")
	if err != nil {
		return l, "", err
	}
	l.EP = mep
	l.Concurrency = bs * max(l.DP, 1)
	if m := concurrencyRe.FindStringSubmatch(t.get(row, "silicon_data_source") + " " + t.get(row, "id")); m != nil {
		if n, e := strconv.Atoi(m[1]); e == nil && n != l.Concurrency {
			return l, "batch_size x attention_dp_size is not the concurrency the run states", nil
		}
	}
	if n := mtp * mep; mtp > 1 && mep > 1 && t.beyondDomain(t.get(row, "system"), n) {
		switch n {
		case l.DP:
			l.DP = mep
		case l.TP:
			l.TP = mep
		}
	}
	return l, "", nil
}

// beyondDomain says whether n GPUs exceed the system's NVLink domain; a
// table without a catalog, or a system outside it, says no.
func (t *csvTable) beyondDomain(system string, n int) bool {
	if t.domain == nil {
		return false
	}
	d := t.domain(system)
	return d > 0 && n > d
}
