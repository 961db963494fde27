// Package helmchart renders gpuplane's Helm charts with Helm's own Go
// library, for tests and for checking them against a cluster.
package helmchart

import (
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/engine"
)

// Render loads the chart in dir and renders it as release name in
// namespace with values over the chart's defaults. It returns the YAML
// documents of the templates in file order, NOTES.txt left out.
func Render(dir, name, namespace string, values map[string]any) ([]string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	vals, err := util.ToRenderValues(ch, values, common.ReleaseOptions{Name: name, Namespace: namespace, IsInstall: true},
		common.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("chart values: %w", err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart: %w", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if strings.HasSuffix(n, ".yaml") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var docs []string
	for _, n := range names {
		for _, d := range strings.Split(files[n], "\n---") {
			if s := strings.TrimSpace(strings.TrimPrefix(d, "---")); s != "" && !onlyComments(s) {
				docs = append(docs, s)
			}
		}
	}
	return docs, nil
}

func onlyComments(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}
