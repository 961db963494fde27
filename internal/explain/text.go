package explain

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteText renders a report for a terminal: the verdict, each request's
// nodes with their devices' reasons grouped (one example each), the nodes
// whose devices are all of other classes on one line, then the fixes.
// allDevices lists every device instead of groups.
func (r *Report) WriteText(w io.Writer, allDevices bool) error {
	var b strings.Builder
	if r.Allocatable {
		fmt.Fprintf(&b, "%s: allocatable on %s\n", r.Subject, shortList(r.FitsOn, 8))
	} else {
		fmt.Fprintf(&b, "%s: NOT allocatable on any node\n", r.Subject)
	}
	fmt.Fprintf(&b, "claims: %s\n", strings.Join(r.Claims, ", "))
	if r.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", r.Note)
	}
	for _, p := range r.NodeProblems {
		fmt.Fprintf(&b, "node %s: %s\n", p.Node, p.Reason)
	}
	for _, rr := range r.Requests {
		what := fmt.Sprintf("count %d", rr.Count)
		if rr.All {
			what = "all devices"
		}
		alt := ""
		if rr.Alternative > 0 {
			alt = fmt.Sprintf(", firstAvailable alternative %d", rr.Alternative)
		}
		fmt.Fprintf(&b, "\nrequest %s of %s (class %s, %s%s):\n", rr.Request, rr.Claim, rr.Class, what, alt)
		var otherClass, more []string
		// The nodes closest to serving first; a long tail is summed up.
		nodes := append([]NodeRequest(nil), rr.Nodes...)
		sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Candidates > nodes[j].Candidates })
		shown := 0
		for _, n := range nodes {
			groups, order, foreign := group(n, rr.Class)
			if foreign == len(n.Devices) {
				otherClass = append(otherClass, n.Node)
				continue
			}
			if shown == maxNodesShown && !allDevices {
				more = append(more, n.Node)
				continue
			}
			shown++
			mark := "not enough"
			if rr.enough(n) {
				mark = "enough"
			}
			fmt.Fprintf(&b, "  %s: %d of %d devices are candidates (%s)\n", n.Node, n.Candidates, len(n.Devices)-foreign, mark)
			if allDevices {
				for _, v := range n.Devices {
					fmt.Fprintf(&b, "    %-10s %s %s\n", v.Kind, v.Device, v.Reason)
				}
				continue
			}
			for _, k := range order {
				g := groups[k]
				if g.kind == KindCandidate {
					fmt.Fprintf(&b, "    %-10s x%d e.g. %s\n", g.kind, g.n, g.example.Device)
					continue
				}
				fmt.Fprintf(&b, "    %-10s x%d %s (e.g. %s)\n", g.kind, g.n, g.example.Reason, g.example.Device)
			}
		}
		if len(more) > 0 {
			fmt.Fprintf(&b, "  %d more node(s) with fewer candidates (-o json or --devices lists them): %s\n", len(more), shortList(more, 6))
		}
		if len(otherClass) > 0 {
			fmt.Fprintf(&b, "  %d node(s) publish no device of class %s: %s\n", len(otherClass), rr.Class, shortList(otherClass, 6))
		}
	}
	for _, c := range r.Constraints {
		fmt.Fprintf(&b, "\nconstraint: %s\n", c)
	}
	if len(r.Fixes) > 0 {
		b.WriteString("\nnearest fixes:\n")
		for i, f := range r.Fixes {
			fmt.Fprintf(&b, "  %d. %s\n", i+1, f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxNodesShown bounds the text report on large clusters.
const maxNodesShown = 8

type reasonGroup struct {
	kind    string
	n       int
	example DeviceVerdict
}

// group buckets a node's verdicts by kind and condition; devices that fail
// the class's own selector are counted apart (foreign).
func group(n NodeRequest, class string) (map[string]*reasonGroup, []string, int) {
	groups := map[string]*reasonGroup{}
	var order []string
	foreign := 0
	for _, v := range n.Devices {
		if v.Kind == KindSelector && strings.HasPrefix(v.Reason, "class "+class+":") {
			foreign++
			continue
		}
		key := v.Kind + "|" + v.Condition
		if v.Kind != KindSelector && v.Kind != KindCandidate && v.Kind != KindInUse {
			key = v.Kind + "|" + v.Reason
		}
		g, ok := groups[key]
		if !ok {
			g = &reasonGroup{kind: v.Kind, example: v}
			groups[key] = g
			order = append(order, key)
		}
		g.n++
		if v.Kind == KindInUse && g.n > 1 {
			g.example.Reason += ", " + strings.TrimPrefix(v.Reason, "allocated to ")
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		return groups[order[i]].kind == KindCandidate && groups[order[j]].kind != KindCandidate
	})
	return groups, order, foreign
}

// WriteText renders a capacity report.
func (c *CapacityReport) WriteText(w io.Writer) error {
	var b strings.Builder
	more := ""
	if c.Capped {
		more = " (stopped at the limit; more may fit)"
	}
	fmt.Fprintf(&b, "%d more claim(s) of %s fit%s\n", c.Fits, c.Template, more)
	if c.NoDevices != "" {
		fmt.Fprintf(&b, "  %s\n", c.NoDevices)
	}
	for _, n := range c.PerNode {
		tag := ""
		if n.WhatIf {
			tag = "  (what-if node)"
		}
		fmt.Fprintf(&b, "  %-24s %d%s\n", n.Node, n.Count, tag)
	}
	if len(c.WhatIfClasses) > 0 {
		fmt.Fprintf(&b, "what-if DeviceClasses (the new nodes' driver installs them; the cluster has none of these): %s\n", strings.Join(c.WhatIfClasses, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
