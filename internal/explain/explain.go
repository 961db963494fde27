package explain

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Report is the explanation of one pod or claim.
type Report struct {
	Subject string   `json:"subject"`
	Claims  []string `json:"claims"`
	// Allocatable is the scheduler allocator's verdict; FitsOn the nodes where it holds.
	Allocatable bool     `json:"allocatable"`
	FitsOn      []string `json:"fitsOn,omitempty"`
	// Note says when an allocated claim is explained as if it were not.
	Note         string          `json:"note,omitempty"`
	NodeProblems []NodeProblem   `json:"nodeProblems,omitempty"`
	Requests     []RequestReport `json:"requests"`
	Constraints  []string        `json:"constraints,omitempty"`
	Fixes        []string        `json:"fixes,omitempty"`
}

// NodeProblem is a node the pod cannot use whatever its devices.
type NodeProblem struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// RequestReport is one request (or firstAvailable alternative) of a claim.
type RequestReport struct {
	Claim   string `json:"claim"`
	Request string `json:"request"`
	Class   string `json:"class"`
	Count   int64  `json:"count"`
	All     bool   `json:"all,omitempty"`
	// Alternative is the position in firstAvailable (0 for a plain request).
	Alternative int           `json:"alternative,omitempty"`
	Nodes       []NodeRequest `json:"nodes"`
}

// NodeRequest is one node's devices judged for one request.
type NodeRequest struct {
	Node       string          `json:"node"`
	Candidates int             `json:"candidates"`
	Devices    []DeviceVerdict `json:"devices"`
}

// Enough says whether the node has the candidates the request needs.
func (r RequestReport) enough(n NodeRequest) bool {
	if r.All {
		return n.Candidates > 0 && n.Candidates == len(n.Devices)
	}
	return int64(n.Candidates) >= r.Count
}

// ExplainClaim explains one claim on its own.
func ExplainClaim(ctx context.Context, s *Snapshot, ns, name string) (*Report, error) {
	c, err := s.Claim(ns, name)
	if err != nil {
		return nil, err
	}
	return explain(ctx, s, "claim "+ns+"/"+name, []*resourceapi.ResourceClaim{c}, nil)
}

// ExplainPod explains a pod's claims together, on the nodes the pod may use.
func ExplainPod(ctx context.Context, s *Snapshot, ns, name string) (*Report, error) {
	p, err := s.Pod(ns, name)
	if err != nil {
		return nil, err
	}
	claims, err := s.PodClaims(p)
	if err != nil {
		return nil, err
	}
	if len(claims) == 0 {
		return nil, fmt.Errorf("pod %s/%s has no resource claims; explain covers DRA claims", ns, name)
	}
	return explain(ctx, s, "pod "+ns+"/"+name, claims, p)
}

func explain(ctx context.Context, s *Snapshot, subject string, claims []*resourceapi.ResourceClaim, pod *corev1.Pod) (*Report, error) {
	rep := &Report{Subject: subject}
	for i, c := range claims {
		c = c.DeepCopy()
		c.Spec = withDefaults(c.Spec)
		if err := validateClaim(c); err != nil {
			return nil, err
		}
		claims[i] = c
	}
	skip := map[types.UID]bool{}
	for _, c := range claims {
		rep.Claims = append(rep.Claims, c.Namespace+"/"+c.Name)
		skip[c.UID] = true
		if c.Status.Allocation != nil {
			rep.Note = "allocated already; explained as if its devices were free again"
		}
	}
	st := newState(s, skip)
	var nodes []*corev1.Node
	for _, n := range st.nodesSorted() {
		if pod != nil {
			if why := podExcludes(pod, n); why != "" {
				// Worth saying only where the node has devices the claims could use.
				if k := st.candidatesOn(ctx, claims, n); k > 0 {
					rep.NodeProblems = append(rep.NodeProblems, NodeProblem{Node: n.Name,
						Reason: fmt.Sprintf("%s, though it has %d candidate device(s)", why, k)})
				}
				continue
			}
		}
		nodes = append(nodes, n)
	}
	fits, err := st.allocate(ctx, claims, nodes)
	if err != nil {
		return nil, err
	}
	for n := range fits {
		rep.FitsOn = append(rep.FitsOn, n)
	}
	sort.Strings(rep.FitsOn)
	rep.Allocatable = len(fits) > 0
	for _, c := range claims {
		for _, alts := range requestsOf(c) {
			for i, rs := range alts {
				rr := RequestReport{Claim: c.Namespace + "/" + c.Name, Request: rs.name, Class: rs.class, Count: rs.count, All: rs.all}
				if len(alts) > 1 {
					rr.Alternative = i + 1
				}
				for _, n := range nodes {
					devs := st.devicesOn(n)
					if len(devs) == 0 {
						continue
					}
					nr := NodeRequest{Node: n.Name}
					for _, nd := range devs {
						v := st.judge(ctx, rs, nd)
						if v.Kind == KindCandidate {
							nr.Candidates++
						}
						nr.Devices = append(nr.Devices, v)
					}
					rr.Nodes = append(rr.Nodes, nr)
				}
				rep.Requests = append(rep.Requests, rr)
			}
		}
		rep.Constraints = append(rep.Constraints, constraintNotes(ctx, st, c, rep, fits)...)
	}
	if !rep.Allocatable {
		rep.Fixes = fixes(ctx, st, claims, rep)
	}
	return rep, nil
}

// podExcludes says why the pod cannot go to node n at all: its node
// selector, or a node taint it does not tolerate.
func podExcludes(p *corev1.Pod, n *corev1.Node) string {
	if len(p.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(p.Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
		return fmt.Sprintf("node selector %s does not match", labels.FormatLabels(p.Spec.NodeSelector))
	}
	if p.Spec.NodeName != "" && p.Spec.NodeName != n.Name {
		return "pod is bound to node " + p.Spec.NodeName
	}
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		ok := false
		for _, tol := range p.Spec.Tolerations {
			if tol.ToleratesTaint(klog.Background(), &t, false) {
				ok = true
			}
		}
		if !ok {
			return fmt.Sprintf("node taint %s=%s:%s not tolerated", t.Key, t.Value, t.Effect)
		}
	}
	return ""
}

// constraintNotes explains nodes where every request has enough candidates
// but the allocator still fails: the claim's constraints (matchAttribute)
// or the requests together cannot be met there.
func constraintNotes(ctx context.Context, st *state, c *resourceapi.ResourceClaim, rep *Report, fits map[string][]resourceapi.AllocationResult) []string {
	var out []string
	byNode := map[string]bool{}
	name := c.Namespace + "/" + c.Name
	for _, rr := range rep.Requests {
		if rr.Claim != name {
			continue
		}
		for _, n := range rr.Nodes {
			if _, seen := byNode[n.Node]; !seen {
				byNode[n.Node] = true
			}
			if !rr.enough(n) && rr.Alternative == 0 {
				byNode[n.Node] = false
			}
		}
	}
	nodes := make([]string, 0, len(byNode))
	for n, ok := range byNode {
		if _, fit := fits[n]; ok && !fit {
			nodes = append(nodes, n)
		}
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		note := fmt.Sprintf("node %s: every request has enough candidate devices, but not together", n)
		for _, con := range c.Spec.Devices.Constraints {
			if con.MatchAttribute == nil {
				continue
			}
			note += fmt.Sprintf("; matchAttribute %s among the candidates: %s", *con.MatchAttribute, attributeSpread(st, rep, name, n, string(*con.MatchAttribute)))
		}
		out = append(out, note)
	}
	return out
}

// attributeSpread counts the candidates of a node by an attribute's value.
func attributeSpread(st *state, rep *Report, claim, node, attr string) string {
	counts := map[string]int{}
	for _, rr := range rep.Requests {
		if rr.Claim != claim {
			continue
		}
		for _, n := range rr.Nodes {
			if n.Node != node {
				continue
			}
			for _, v := range n.Devices {
				if v.Kind != KindCandidate {
					continue
				}
				val := "<none>"
				if id, ok := st.byName[v.Device]; ok {
					d := st.index[id]
					domain, short, _ := strings.Cut(attr, "/")
					if a, ok := d.Attributes[resourceapi.QualifiedName(short)]; ok && id.Driver.String() == domain {
						val = attrString(a)
					} else if a, ok := d.Attributes[resourceapi.QualifiedName(attr)]; ok {
						val = attrString(a)
					}
				}
				counts[val]++
			}
		}
	}
	keys := slices.Sorted(maps.Keys(counts))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// candidatesOn counts the devices of node n that could serve some request
// of the claims.
func (st *state) candidatesOn(ctx context.Context, claims []*resourceapi.ResourceClaim, n *corev1.Node) int {
	devs := st.devicesOn(n)
	k := 0
	for _, nd := range devs {
	next:
		for _, c := range claims {
			for _, alts := range requestsOf(c) {
				for _, rs := range alts {
					if st.judge(ctx, rs, nd).Kind == KindCandidate {
						k++
						break next
					}
				}
			}
		}
	}
	return k
}
