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
// TensorRT-LLM runs the experts of an attention-DP worker over its own
// GPUs (moe_tp x moe_ep = dp). Rows with dp equal to that product while
// both factors exceed one (dp 64 with moe 8 x 8) were exported from
// attention-DP runs of moe_ep GPUs: fifteen of them repeat, value for value,
// a run of the same campaign recorded as dp = moe_ep (8 or 4), and their
// ids name that run (tp8_ep8). They are read as that run, with the same
// users.
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
	if t.get(row, "backend") == "trtllm" && l.DP > 1 && mtp > 1 && mep > 1 && mtp*mep == l.DP {
		l.DP = mep
	}
	return l, "", nil
}
