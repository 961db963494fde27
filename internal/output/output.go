// Package output renders command results as a table, JSON, YAML or JSON lines.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Format is an output format.
type Format string

// Formats.
const (
	Table Format = "table"
	JSON  Format = "json"
	YAML  Format = "yaml"
	JSONL Format = "jsonl"
)

// ParseFormat validates an -o value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case Table, JSON, YAML, JSONL:
		return f, nil
	}
	if strings.ContainsAny(s, "./") {
		// A file name: -o picks a format; files come from flags such as --report.
		return "", fmt.Errorf("output: %q is not one of table, json, yaml, jsonl; -o picks the printed format, and files are written by the command's flags (--report FILE.html, --json FILE; simulate also takes -o FILE.html)", s)
	}
	return "", fmt.Errorf("output: %q is not one of table, json, yaml, jsonl", s)
}

// Tabular is implemented by results that can print as a table.
type Tabular interface {
	Header() []string
	Rows() [][]string
}

// Write renders v. For table output v must be Tabular; for jsonl a slice is
// written one element per line.
func Write(w io.Writer, f Format, v any) error {
	switch f {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case YAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case JSONL:
		return WriteLines(w, v)
	}
	t, ok := v.(Tabular)
	if !ok {
		return fmt.Errorf("output: this result has no table form; use -o json or -o yaml")
	}
	return WriteTable(w, t)
}

// WriteLines writes a slice as JSON lines, or a single value as one line.
func WriteLines(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	if items, ok := v.(interface{ Items() []any }); ok {
		for _, it := range items.Items() {
			if err := enc.Encode(it); err != nil {
				return err
			}
		}
		return nil
	}
	return enc.Encode(v)
}

// WriteTable aligns a table in columns.
func WriteTable(w io.Writer, t Tabular) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.Header(), "\t"))
	for _, r := range t.Rows() {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}
