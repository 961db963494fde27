package explain

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// fixes proposes the smallest changes that would make the claims
// schedulable, most specific first. Each names what to change and how many
// devices it would open up.
func fixes(ctx context.Context, st *state, claims []*resourceapi.ResourceClaim, rep *Report) []string {
	var out []string
	if len(rep.NodeProblems) > 0 {
		var names []string
		for _, p := range rep.NodeProblems {
			names = append(names, p.Node+" ("+p.Reason+")")
		}
		out = append(out, fmt.Sprintf("the pod's node selection or tolerations exclude %d node(s) with candidate devices: %s; widen them",
			len(names), shortList(names, 3)))
	}
	for _, rr := range rep.Requests {
		best, bestNode := 0, ""
		kinds := map[string]int{}
		conds := map[string][]DeviceVerdict{}
		taints := map[string]int{}
		var holders []string
		var capacity []string
		for _, n := range rr.Nodes {
			if rr.enough(n) {
				best = -1
				break
			}
			if n.Candidates > best {
				best, bestNode = n.Candidates, n.Node
			}
			for _, v := range n.Devices {
				kinds[v.Kind]++
				switch v.Kind {
				case KindSelector:
					if strings.HasPrefix(v.Reason, "request ") {
						conds[v.Condition] = append(conds[v.Condition], v)
					}
				case KindTaint:
					taints[strings.TrimSuffix(strings.TrimPrefix(v.Reason, "taint "), " not tolerated")]++
				case KindInUse:
					holders = append(holders, v.Device+" ("+strings.TrimPrefix(v.Reason, "allocated to ")+")")
				case KindCapacity:
					capacity = append(capacity, v.Device+": "+v.Reason)
				}
			}
		}
		if best < 0 {
			continue // some node has enough for this request
		}
		label := fmt.Sprintf("request %s of %s", rr.Request, rr.Claim)
		// A condition that alone rules out devices which are otherwise free.
		spec := findSpec(claims, rr)
		for _, cond := range slices.Sorted(maps.Keys(conds)) {
			// Trying a bounded number is enough to say the change would help.
			const tryAtMost = 64
			freed, tried := 0, 0
			var example DeviceVerdict
			for _, v := range conds[cond] {
				if tried == tryAtMost {
					break
				}
				tried++
				if st.wouldServe(ctx, spec, v.Device, cond) {
					if freed == 0 {
						example = v
					}
					freed++
				}
			}
			if freed > 0 {
				atLeast := ""
				if tried < len(conds[cond]) {
					atLeast = "at least "
				}
				out = append(out, fmt.Sprintf("%s: relax `%s`; %s%d otherwise free device(s) fail only that, e.g. %s (%s)",
					label, cond, atLeast, freed, example.Device, strings.TrimPrefix(example.Reason, "request "+rr.Request+": ")))
			}
		}
		if !rr.All && best > 0 && int64(best) < rr.Count {
			out = append(out, fmt.Sprintf("%s: lower count from %d to %d (the most candidates on one node, %s) or split it across pods", label, rr.Count, best, bestNode))
		}
		for _, t := range slices.Sorted(maps.Keys(taints)) {
			out = append(out, fmt.Sprintf("%s: %d device(s) carry taint %s; add a toleration to the request or remove the taint (DeviceTaintRule, or the device's health)", label, taints[t], t))
		}
		if len(holders) > 0 {
			sort.Strings(holders)
			out = append(out, fmt.Sprintf("%s: %d matching device(s) are allocated: %s; free one, or add a node of the same kind", label, len(holders), shortList(holders, 4)))
		}
		if len(capacity) > 0 {
			out = append(out, fmt.Sprintf("%s: shared devices lack capacity: %s; request less or add a device", label, shortList(capacity, 3)))
		}
		if kinds[KindCounter] > 0 {
			out = append(out, fmt.Sprintf("%s: %d partition(s) are blocked by partitions already in use on the same GPU; free one of those claims or add a GPU", label, kinds[KindCounter]))
		}
	}
	out = append(out, rep.Constraints...)
	if len(out) == 0 {
		out = append(out, "no node publishes a device for these requests; add a node (see `gpuplane dra-driver fleet --dry-run` for what a pool would publish) or check the class name")
	}
	return out
}

// findSpec returns the request spec of a report entry.
func findSpec(claims []*resourceapi.ResourceClaim, rr RequestReport) requestSpec {
	for _, c := range claims {
		if c.Namespace+"/"+c.Name != rr.Claim {
			continue
		}
		for _, alts := range requestsOf(c) {
			for _, rs := range alts {
				if rs.name == rr.Request {
					return rs
				}
			}
		}
	}
	return requestSpec{}
}

// wouldServe says whether the device would be a candidate with the
// request's condition cond dropped.
func (st *state) wouldServe(ctx context.Context, rs requestSpec, device, cond string) bool {
	relaxed := rs
	relaxed.selectors = nil
	for _, sel := range rs.selectors {
		if sel.CEL == nil {
			continue
		}
		var keep []string
		for _, c := range conjuncts(sel.CEL.Expression) {
			if c != cond {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 {
			continue
		}
		relaxed.selectors = append(relaxed.selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: strings.Join(keep, " && ")}})
	}
	id, ok := st.byName[device]
	if !ok {
		return false
	}
	nd := nodeDevice{driver: id.Driver.String(), pool: id.Pool.String(), dev: st.index[id], counters: st.counterSets(id.Driver.String(), id.Pool.String())}
	return st.judge(ctx, relaxed, nd).Kind == KindCandidate
}

func shortList(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}
