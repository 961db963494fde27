// Package strict decodes YAML documents strictly and names the path of an
// unknown field ("spec.nodePools[0].gpus") with the fields allowed there.
package strict

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Unmarshal decodes data into v, refusing unknown fields by their path.
func Unmarshal(data []byte, v any) error {
	if err := UnknownField(data, v); err != nil {
		return err
	}
	return yaml.UnmarshalStrict(data, v)
}

// UnknownField finds the first field of a YAML document that the Go type
// of v does not have, and names it by its full path ("spec.workload.tokens")
// with the fields that are allowed there.
func UnknownField(data []byte, v any) error {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	return walkFields(reflect.TypeOf(v), doc, "")
}

func walkFields(t reflect.Type, doc any, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := doc.(map[string]any)
		if !ok {
			return nil // a type mismatch; the strict decoder reports it
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			fields[name] = f.Type
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				allowed := make([]string, 0, len(fields))
				for n := range fields {
					allowed = append(allowed, n)
				}
				sort.Strings(allowed)
				return fmt.Errorf("unknown field %q; allowed there: %s", join(path, k), strings.Join(allowed, ", "))
			}
			if err := walkFields(ft, m[k], join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		items, ok := doc.([]any)
		if !ok {
			return nil
		}
		for i, it := range items {
			if err := walkFields(t.Elem(), it, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
