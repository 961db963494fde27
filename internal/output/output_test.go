package output

import (
	"bytes"
	"strings"
	"testing"
)

type tbl struct{}

func (tbl) Header() []string { return []string{"A", "LONGER"} }
func (tbl) Rows() [][]string { return [][]string{{"x", "1"}, {"yyyy", "2"}} }

type list []int

func (l list) Items() []any { return []any{l[0], l[1]} }

func TestFormats(t *testing.T) {
	if _, err := ParseFormat("xml"); err == nil || !strings.Contains(err.Error(), "table, json, yaml, jsonl") {
		t.Fatalf("bad format error: %v", err)
	}
	if _, err := ParseFormat("out/report.pdf"); err == nil || !strings.Contains(err.Error(), "-o picks the printed format") {
		t.Fatalf("a file name for -o: %v", err)
	}
	if _, err := ParseFormat("xml"); err == nil || strings.Contains(err.Error(), "-o picks") {
		t.Fatalf("a format name needs no file hint: %v", err)
	}
	var b bytes.Buffer
	if err := Write(&b, Table, tbl{}); err != nil {
		t.Fatal(err)
	}
	if want := "A     LONGER\nx     1\nyyyy  2\n"; b.String() != want {
		t.Fatalf("table:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	if err := Write(&b, JSONL, list{3, 4}); err != nil || b.String() != "3\n4\n" {
		t.Fatalf("jsonl: %q %v", b.String(), err)
	}
	b.Reset()
	if err := Write(&b, Table, 5); err == nil {
		t.Fatal("a value without a table form must be an error")
	}
	b.Reset()
	if err := Write(&b, YAML, map[string]int{"a": 1}); err != nil || b.String() != "a: 1\n" {
		t.Fatalf("yaml: %q %v", b.String(), err)
	}
}
