package strict

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Why restates a decoder's error on data in the document's own terms: a
// NaN or infinity by its path and line (the YAML-to-JSON step refuses one
// without saying where), a value of the wrong kind by its path and what the
// field takes. Other errors are returned as they are. It looks into data
// only when decoding failed.
func Why(data []byte, err error) error {
	if err == nil {
		return nil
	}
	if nf := nonFiniteValue(data); nf != nil {
		return nf
	}
	return NameTypeError(err)
}

// nonFiniteValue finds the first scalar a YAML document resolves to NaN or
// an infinity (.nan, .inf, 1e999) and names it by its path and line. A
// document that does not parse here is left to the decoder, which reports
// the syntax error itself.
func nonFiniteValue(data []byte) error {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil {
		return nil
	}
	return nonFinite(&root, "", 0)
}

// maxDepth bounds the walk; the decoder itself refuses deeper documents.
const maxDepth = 10000

func nonFinite(n *yamlv3.Node, path string, depth int) error {
	if n == nil || depth > maxDepth {
		return nil
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			if err := nonFinite(c, path, depth+1); err != nil {
				return err
			}
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := nonFinite(n.Content[i+1], join(path, n.Content[i].Value), depth+1); err != nil {
				return err
			}
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			if err := nonFinite(c, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	case yamlv3.ScalarNode:
		if n.Tag != "!!float" {
			return nil
		}
		var f float64
		if err := n.Decode(&f); err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			if path == "" {
				path = "the document"
			}
			return fmt.Errorf("%s: %s (line %d) is not a finite number; give a number (or quote it, if it is text)", path, n.Value, n.Line)
		}
	}
	return nil
}

// NameTypeError restates a JSON decoder's type mismatch by the field's path in
// the document and what the field takes, instead of Go's type names.
func NameTypeError(err error) error {
	path, what, ok := TypeMismatch(err)
	if !ok {
		return err
	}
	if path == "" {
		path = "the document"
	}
	return fmt.Errorf("%s: %s", path, what)
}

// TypeMismatch splits a JSON decoder's type mismatch into the field's path
// as the document spells it ("" for the whole document) and what is wrong
// ("a list where a string is expected"); ok is false for any other error.
func TypeMismatch(err error) (path, what string, ok bool) {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return "", "", false
	}
	got := te.Value
	if strings.HasPrefix(got, "number ") {
		got = strings.TrimPrefix(got, "number ")
	} else {
		got = "a " + got
		switch te.Value {
		case "array":
			got = "a list"
		case "object":
			got = "a mapping"
		case "bool":
			got = "true or false"
		}
	}
	return fieldPath(te.Field), fmt.Sprintf("%s where %s is expected", got, describe(te.Type)), true
}

// describe names what a Go type takes in a YAML document.
func describe(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number" + intRange(t)
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a " + t.Kind().String()
}

// intRange is the range of a narrow or unsigned integer field (a
// 64-bit one's range needs no saying: the fields' own checks are tighter).
func intRange(t reflect.Type) string {
	bits := t.Bits()
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		if bits == 64 {
			return " (0 or more)"
		}
		return fmt.Sprintf(" (0 to %d)", uint64(math.MaxUint64)>>(64-bits))
	}
	if bits == 64 {
		return ""
	}
	return fmt.Sprintf(" (%d to %d)", int64(math.MinInt64)>>(64-bits), int64(math.MaxInt64)>>(64-bits))
}

// fieldPath writes the decoder's dotted field path as the document spells
// it: a field without a JSON tag is reported by its Go name ("Median"),
// which a document writes from a lower-case letter ("median"); an acronym
// ("ISL") is left as it is.
func fieldPath(p string) string {
	segs := strings.Split(p, ".")
	for i, s := range segs {
		if s != "" && s[0] >= 'A' && s[0] <= 'Z' && (len(s) == 1 || s[1] >= 'a' && s[1] <= 'z') {
			segs[i] = strings.ToLower(s[:1]) + s[1:]
		}
	}
	return strings.Join(segs, ".")
}
