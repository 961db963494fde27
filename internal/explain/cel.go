package explain

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// conjuncts splits a CEL expression at its top-level && operators, so each
// condition can be evaluated and reported on its own.
func conjuncts(expr string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == '&' && depth == 0 && i+1 < len(expr) && expr[i+1] == '&':
			out = append(out, strings.TrimSpace(expr[start:i]))
			start = i + 2
			i++
		}
	}
	out = append(out, strings.TrimSpace(expr[start:]))
	// A whole expression in parentheses is split inside them.
	if len(out) == 1 && strings.HasPrefix(out[0], "(") && strings.HasSuffix(out[0], ")") && balanced(out[0][1:len(out[0])-1]) {
		return conjuncts(out[0][1 : len(out[0])-1])
	}
	return out
}

func balanced(s string) bool {
	d := 0
	for _, c := range s {
		if c == '(' {
			d++
		} else if c == ')' {
			d--
			if d < 0 {
				return false
			}
		}
	}
	return d == 0
}

var refRE = regexp.MustCompile(`device\.(attributes|capacity)\["([^"]+)"\]\.([A-Za-z0-9_]+)|device\.driver`)

// valuesSeen lists the device's values of the attributes and capacities an
// expression refers to: "memory=8Gi, productName=NVIDIA A10".
func valuesSeen(expr, driver string, d *resourceapi.Device) string {
	seen := map[string]string{}
	for _, m := range refRE.FindAllStringSubmatch(expr, -1) {
		if m[0] == "device.driver" {
			seen["driver"] = driver
			continue
		}
		name := resourceapi.QualifiedName(m[3])
		if m[2] != driver {
			name = resourceapi.QualifiedName(m[2] + "/" + m[3])
		}
		switch m[1] {
		case "attributes":
			seen[m[3]] = attrString(d.Attributes[name], d.Attributes[resourceapi.QualifiedName(m[2]+"/"+m[3])])
		case "capacity":
			c, ok := d.Capacity[name]
			if !ok {
				c, ok = d.Capacity[resourceapi.QualifiedName(m[2]+"/"+m[3])]
			}
			if ok {
				seen[m[3]] = c.Value.String()
			} else {
				seen[m[3]] = "<none>"
			}
		}
	}
	keys := slices.Sorted(maps.Keys(seen))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + seen[k]
	}
	return strings.Join(parts, ", ")
}

func attrString(as ...resourceapi.DeviceAttribute) string {
	for _, a := range as {
		switch {
		case a.StringValue != nil:
			return fmt.Sprintf("%q", *a.StringValue)
		case a.IntValue != nil:
			return fmt.Sprint(*a.IntValue)
		case a.BoolValue != nil:
			return fmt.Sprint(*a.BoolValue)
		case a.VersionValue != nil:
			return *a.VersionValue
		}
	}
	return "<none>"
}
