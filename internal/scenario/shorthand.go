package scenario

import (
	"bytes"
	"encoding/json"
)

// A bare number is the short form of a constant: `isl: 1000` is
// `isl: {fixed: 1000}` and `rate: 2` is `rate: {constant: 2}`, as users
// write them first. Mappings decode as before.

func (d *DistSpec) UnmarshalJSON(b []byte) error {
	type plain DistSpec
	return shortForm(b, func(n int) { *d = DistSpec{Fixed: &n} }, (*plain)(d))
}

func (r *RateSpec) UnmarshalJSON(b []byte) error {
	type plain RateSpec
	return shortForm(b, func(v float64) { *r = RateSpec{Constant: &v} }, (*plain)(r))
}

// shortForm decodes a bare number through constant, anything else into full.
func shortForm[N int | float64](b []byte, constant func(N), full any) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '-' || t[0] >= '0' && t[0] <= '9') {
		var n N
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		constant(n)
		return nil
	}
	return json.Unmarshal(b, full)
}
