// Package strict decodes YAML documents strictly and names the path of an
// unknown field ("spec.nodePools[0].gpus") with the fields allowed there.
package strict

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Unmarshal decodes data into v, refusing unknown fields by their path
// and a second YAML document (which a plain decoder silently ignores).
func Unmarshal(data []byte, v any) error {
	if err := SingleDocument(data); err != nil {
		return err
	}
	if err := UnknownField(data, v); err != nil {
		return Why(data, err)
	}
	return Why(data, yaml.UnmarshalStrict(data, v))
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// SingleDocument refuses a file of several YAML documents: only the first
// would be read.
func SingleDocument(data []byte) error {
	n := 0
	for _, doc := range docSeparator.Split(string(data), -1) {
		for _, line := range strings.Split(doc, "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				n++
				break
			}
		}
	}
	if n > 1 {
		return fmt.Errorf("the file holds %d YAML documents, and one is read; keep one document per file", n)
	}
	return nil
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
		fields := map[string]field{}
		collect(t, fields)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f, ok := fields[strings.ToLower(k)] // the JSON decoder matches names case-insensitively
			if !ok {
				allowed := make([]string, 0, len(fields))
				for _, f := range fields {
					allowed = append(allowed, f.name)
				}
				sort.Strings(allowed)
				return fmt.Errorf("unknown field %q; allowed there: %s", join(path, k), strings.Join(allowed, ", "))
			}
			if err := walkFields(f.typ, m[k], join(path, k)); err != nil {
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

type field struct {
	name string
	typ  reflect.Type
}

// collect lists a struct's fields as the JSON decoder sees them: by tag,
// else by Go name, embedded structs inlined.
func collect(t reflect.Type, into map[string]field) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				collect(et, into)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name[:1]) + f.Name[1:]
		}
		into[strings.ToLower(name)] = field{name: name, typ: f.Type}
	}
}

// MaxFileBytes bounds the configuration files gpuplane reads whole.
const MaxFileBytes = 16 << 20

// ReadFile reads a configuration file of at most MaxFileBytes: a bigger
// one is refused before it is read, not loaded into memory.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB; a configuration file this size is a mistake", path, MaxFileBytes>>20)
	}
	return TrimBOM(b), nil
}

// TrimBOM drops a leading UTF-8 byte-order mark: Windows editors and
// spreadsheet exports start files with one, and a JSON decoder refuses it
// as its first character.
func TrimBOM(b []byte) []byte { return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) }
