package calibrate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/sharedtest"
)

const repeatHeader = "id,silicon_data_source,backend,model_path,system,precision,mode,isl,osl,batch_size,tp_size,pp_size,attention_dp_size,moe_ep_size," +
	"prefill_num_workers,prefill_tp_size,decode_num_workers,decode_tp_size,silicon_ttft_ms,silicon_tpot_ms"

func TestRepeatedMeasurementsCountOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rows    []string
		kept    []string // IDs loaded as cases, in order
		skipped map[string]string
		disagg  bool
	}{
		{"one measurement in two campaigns keeps the first",
			[]string{
				"a,source_file=x.csv,vllm,m,h100_sxm,fp8,agg,1024,128,8,1,1,1,,,,,,123.4567891,12.3456789",
				"b,source_file=y.csv,vllm,m,h100_sxm,fp8,agg,1024,128,8,1,1,1,,,,,,123.4567891,12.3456789",
			}, []string{"a"}, map[string]string{"b": reasonRepeat + " a"}, false},
		{"another name of the model is the same measurement",
			[]string{
				"a,source_file=x.csv,vllm,m,h100_sxm,fp8,agg,1024,128,8,1,1,1,,,,,,123.4567891,12.3456789",
				"b,db-dump/z,vllm,m2,h100_sxm,fp8,agg,1024,128,8,1,1,1,,,,,,123.4567891,12.3456789",
			}, []string{"a"}, map[string]string{"b": reasonRepeat + " a"}, false},
		{"a re-export that multiplies dp loses",
			[]string{
				"a,source_file=x.csv,trtllm,m,h100_sxm,fp8,agg,1024,128,32,1,1,8,8,,,,,791.143624140841,23.911889364846708",
				"b,source_file=y.csv,trtllm,m,h100_sxm,fp8,agg,1024,128,4,1,1,64,8,,,,,791.143624140841,23.911889364846708",
			}, []string{"a"}, map[string]string{"b": reasonRepeatConf + " a"}, false},
		{"of conflicting records the one on fewer GPUs is kept, wherever listed",
			[]string{
				"a,db-dump/z,sglang,m,h100_sxm,fp4,agg,1024,1024,8,64,1,1,8,,,,,212.345678901,9.87654321012",
				"b,source_file=x.csv,sglang,m,h100_sxm,fp4,agg,1024,1024,8,8,1,1,8,,,,,212.345678901,9.87654321012",
				"c,source_file=y.csv,sglang,m,h100_sxm,fp4,agg,1024,1024,8,64,1,1,8,,,,,212.345678901,9.87654321012",
			}, []string{"b"}, map[string]string{"a": reasonRepeatConf + " b", "c": reasonRepeatConf + " b"}, false},
		{"the record with worker counts wins over an earlier one",
			[]string{
				"a,source_file=x.csv_c36,trtllm,m,h100_sxm,fp8,disagg,8192,1024,,,,,,,4,,8,1234.56789012,21.0987654321",
				"b,db-dump/z_c36,trtllm,m,h100_sxm,fp8,disagg,8192,1024,,,,,,1,4,4,8,1234.56789012,21.0987654321",
			}, []string{"b"}, map[string]string{"a": reasonRepeatConf + " b"}, true},
		{"worker counts outrank a record on fewer GPUs",
			[]string{
				"a,source_file=x.csv_c16,sglang,m,h100_sxm,fp8,disagg,1024,1024,,,,,,,1,,1,345.678901234,12.3456789012",
				"b,db-dump/z_c16,sglang,m,h100_sxm,fp8,disagg,1024,1024,,,,,,1,8,2,8,345.678901234,12.3456789012",
			}, []string{"b"}, map[string]string{"a": reasonRepeatConf + " b"}, true},
		{"rounded values are not taken for one measurement",
			[]string{
				"a,source_file=x.csv,vllm,m,h100_sxm,fp8,agg,1024,128,8,1,1,1,,,,,,123.40000,12.5",
				"b,source_file=y.csv,vllm,m,h100_sxm,fp8,agg,1024,128,8,1,1,1,,,,,,123.4,12.5",
			}, []string{"a", "b"}, nil, false},
		{"a float round trip's last digit is the same measurement",
			[]string{
				"a,source_file=x.csv,vllm,m,b200_sxm,int4,agg,8192,1024,32,8,1,1,1,,,,,1022.4531090767416,29.67868387597611",
				"b,source_file=y.csv,vllm,m,b200_sxm,int4,agg,8192,1024,32,8,1,1,1,,,,,1022.4531090767415,29.67868387597611",
			}, []string{"a"}, map[string]string{"b": reasonRepeat + " a"}, false},
		{"a copy rounded to two decimals repeats the full record, wherever listed",
			[]string{
				"a,source_file=gap.csv,vllm,m,b200_sxm,int4,agg,8192,1024,32,8,1,1,1,,,,,1022.45,29.68",
				"b,source_file=x.csv,vllm,m,b200_sxm,int4,agg,8192,1024,32,8,1,1,1,,,,,1022.4531090767416,29.67868387597611",
			}, []string{"b"}, map[string]string{"a": reasonRepeat + " b"}, false},
		{"a rounded copy on fewer GPUs outranks a full record that multiplies tp",
			[]string{
				"a,source_file=x.csv,sglang,m,b200_sxm,fp8,agg,1024,1024,16,64,1,1,8,,,,,212.345678901,9.87654321012",
				"b,source_file=gap.csv,sglang,m,b200_sxm,fp8,agg,1024,1024,16,8,1,1,8,,,,,212.35,9.88",
			}, []string{"b"}, map[string]string{"a": reasonRepeatConf + " b"}, false},
		{"a rounded record the full one does not round to is another run",
			[]string{
				"a,source_file=x.csv,vllm,m,b200_sxm,int4,agg,8192,1024,32,8,1,1,1,,,,,1022.4531090767416,29.67868387597611",
				"b,source_file=gap.csv,vllm,m,b200_sxm,int4,agg,8192,1024,32,8,1,1,1,,,,,1022.46,29.68",
			}, []string{"a", "b"}, nil, false},
		{"a record of too few digits is not taken for a copy",
			[]string{
				"a,source_file=x.csv,vllm,m,b200_sxm,int4,agg,8192,1024,32,8,1,1,1,,,,,1022.4531090767416,29.67868387597611",
				"b,source_file=gap.csv,vllm,m,b200_sxm,int4,agg,8192,1024,32,8,1,1,1,,,,,1022,30",
			}, []string{"a", "b"}, nil, false},
		{"another prompt length is another run",
			[]string{
				"a,source_file=x.csv,vllm,m,h100_sxm,fp8,agg,1024,128,8,1,1,1,,,,,,123.4567891,12.3456789",
				"b,source_file=y.csv,vllm,m,h100_sxm,fp8,agg,2048,128,8,1,1,1,,,,,,123.4567891,12.3456789",
			}, []string{"a", "b"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "silicon_calibration.csv")
			if err := os.WriteFile(path, []byte(repeatHeader+"\n"+strings.Join(tc.rows, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cases, skipped, err := LoadSilicon(path, func(string) (bool, bool) { return true, true })
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, c := range cases {
				kept = append(kept, c.ID)
			}
			if !slices.Equal(kept, tc.kept) {
				t.Errorf("cases %v, want %v", kept, tc.kept)
			}
			got := map[string]string{}
			for _, s := range skipped {
				got[s.ID] = s.Reason + " " + s.Of
			}
			if len(got) != len(tc.skipped) {
				t.Errorf("skipped %v, want %v", got, tc.skipped)
			}
			for id, want := range tc.skipped {
				if got[id] != want {
					t.Errorf("%s skipped as %q, want %q", id, got[id], want)
				}
			}
			// The decision grids see each measurement once too.
			rows, err := LoadGridRows(path)
			if err != nil {
				t.Fatal(err)
			}
			var gridIDs []string
			for _, r := range rows {
				gridIDs = append(gridIDs, r.ID)
			}
			wantGrid := tc.kept
			if tc.disagg {
				wantGrid = nil // the grids are aggregated runs
			}
			if !slices.Equal(gridIDs, wantGrid) {
				t.Errorf("grid rows %v, want %v", gridIDs, wantGrid)
			}
		})
	}
}

func TestSigDigits(t *testing.T) {
	for s, want := range map[string]int{"123.4567891": 10, "0.00123": 3, "123.40000": 4, "1.5e3": 2, "1200": 4, "": 0, "-0.5": 1} {
		if got := sigDigits(s); got != want {
			t.Errorf("sigDigits(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestSkipReasonsMostFrequentFirst(t *testing.T) {
	got := SkipReasons([]Skipped{{Reason: "b"}, {Reason: "a"}, {Reason: "b"}, {Reason: "c"}})
	want := []ReasonCount{{"b", 2}, {"a", 1}, {"c", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

// On the shared runs no measurement is loaded twice, so no campaign or
// model fold can hold out a run that another fold trains on; and every
// row left out as a repeat names a kept row that was loaded.
func TestSharedRunsLoadEachMeasurementOnce(t *testing.T) {
	ds, err := LoadDir(sharedtest.Path(t, "calibration"), catalog.MustDefault())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	full := map[string]string{} // full records at two decimals
	var rounded []Case          // records written to two decimals
	loaded := map[string]bool{}
	twoDecimals := func(v float64) bool { return v == math.Round(v*100)/100 }
	for _, c := range ds.Cases {
		loaded[c.ID] = true
		if c.Source != "silicon" {
			continue
		}
		run := fmt.Sprintf("%s/%s/%s/%d/%d", c.System, c.Backend, c.Mode, c.Query.ISL, c.Query.OSL)
		if twoDecimals(c.TTFTms) && twoDecimals(c.TPOTms) {
			rounded = append(rounded, c)
			continue
		}
		k := fmt.Sprintf("%s/%.6g/%.6g", run, c.TTFTms, c.TPOTms)
		if other, ok := seen[k]; ok {
			t.Errorf("%s and %s are one measurement, loaded twice", other, c.ID)
		}
		seen[k] = c.ID
		full[fmt.Sprintf("%s/%.2f/%.2f", run, c.TTFTms, c.TPOTms)] = c.ID
	}
	for _, c := range rounded {
		k := fmt.Sprintf("%s/%s/%s/%d/%d/%.2f/%.2f", c.System, c.Backend, c.Mode, c.Query.ISL, c.Query.OSL, c.TTFTms, c.TPOTms)
		if other, ok := full[k]; ok {
			t.Errorf("%s is %s rounded to two decimals, loaded twice", c.ID, other)
		}
	}
	repeats := 0
	for _, s := range ds.Skipped {
		if s.Of == "" {
			continue
		}
		repeats++
		if !loaded[s.Of] {
			t.Errorf("%s is left out for %s, which was not loaded", s.ID, s.Of)
		}
	}
	if repeats == 0 {
		t.Error("the shared runs hold repeated measurements; none was found")
	}
}

// A spreadsheet's UTF-8 export starts with a byte-order mark; the first
// column is still found by its name.
func TestLoadSiliconAfterByteOrderMark(t *testing.T) {
	row := "a,source_file=x.csv,vllm,m,h100_sxm,fp8,agg,1024,128,8,1,1,1,,,,,,123.4567891,12.3456789"
	path := filepath.Join(t.TempDir(), "silicon_calibration.csv")
	if err := os.WriteFile(path, []byte("\ufeff"+repeatHeader+"\n"+row+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, _, err := LoadSilicon(path, func(string) (bool, bool) { return true, true })
	if err != nil || len(cases) != 1 || cases[0].ID != "a" {
		t.Fatalf("cases %+v, err %v", cases, err)
	}
}
