package scenario

import (
	"bytes"
	"encoding/json"
)

// A bare number is the short form of a constant: `isl: 1000` is
// `isl: {fixed: 1000}` and `rate: 2` is `rate: {constant: 2}`, as users
// write them first. Mappings decode as before.

func (d *DistSpec) UnmarshalJSON(b []byte) error {
	if isNumber(b) {
		var n int
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		*d = DistSpec{Fixed: &n}
		return nil
	}
	type plain DistSpec
	return json.Unmarshal(b, (*plain)(d))
}

func (r *RateSpec) UnmarshalJSON(b []byte) error {
	if isNumber(b) {
		var v float64
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*r = RateSpec{Constant: &v}
		return nil
	}
	type plain RateSpec
	return json.Unmarshal(b, (*plain)(r))
}

func isNumber(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9')
}
