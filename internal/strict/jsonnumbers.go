package strict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// maxExactWhole bounds the numbers rewritten: below 2^53 every whole
// number is a float64 of its own, so the rewrite reads a literal as any
// reader that keeps numbers as floats does (at 2^53 and above, 2^53+1
// would read as 2^53).
const maxExactWhole = 1 << 53

// WholeNumbers rewrites the top-level numbers of a JSON object that are
// whole but written with a fraction or an exponent (4.0, 1e3) as plain
// integers. Tools that keep every number as a float (pandas, jq, many
// spreadsheets) write counts so, and JSON does not tell 4.0 from 4; a Go
// decoder refuses 4.0 for an integer field. A number with a fraction
// (4.5), beyond 2^53, or anything that is not an object, is returned as it
// was, for the decoder to judge.
func WholeNumbers(obj []byte) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil || fields == nil {
		return obj
	}
	changed := false
	for k, raw := range fields {
		if w, ok := wholeLiteral(raw); ok {
			fields[k], changed = w, true
		}
	}
	if !changed {
		return obj
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return obj
	}
	return out
}

// wholeLiteral is raw as an integer literal when raw is a number with a
// fraction or exponent whose value is whole and exact.
func wholeLiteral(raw json.RawMessage) (json.RawMessage, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) || !bytes.ContainsAny(t, ".eE") {
		return nil, false
	}
	v, err := strconv.ParseFloat(string(t), 64)
	if err != nil || v != math.Trunc(v) || math.Abs(v) >= maxExactWhole {
		return nil, false
	}
	return json.RawMessage(strconv.FormatInt(int64(v), 10)), true
}

// nonJSONNumber matches a key whose value is NaN or an infinity written
// bare, as Python's json module writes them by default; JSON has no such
// values, and the decoder's own error ("invalid character 'N'") does not
// say which key holds one.
var nonJSONNumber = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"\s*:\s*(NaN|-?Infinity)\b`)

// NonJSONNumber names the first key of a JSON text whose value is a bare
// NaN or infinity; nil when there is none.
func NonJSONNumber(data []byte) error {
	m := nonJSONNumber.FindSubmatch(data)
	if m == nil {
		return nil
	}
	return fmt.Errorf("%s: %s is not a JSON number; give a number, or leave the key out", m[1], m[2])
}
