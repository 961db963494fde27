package calibrate

import (
	"fmt"
	"sort"

	"github.com/gpuplane/gpuplane/internal/catalog"
	"github.com/gpuplane/gpuplane/internal/estimate"
	"github.com/gpuplane/gpuplane/internal/perf"
)

// CVUnits are what cross-validation may hold out.
var CVUnits = []string{"model", "system", "campaign"}

// cvKeys is cvKey for each grouping of by, the searches' held-out
// groupings; search names the search in the error for an empty list.
func cvKeys(search string, by []string, cat *catalog.Catalog) ([]func(Case) string, error) {
	if len(by) == 0 {
		return nil, fmt.Errorf("%s: name at least one grouping to hold out (model, system or campaign)", search)
	}
	keys := make([]func(Case) string, len(by))
	for i, b := range by {
		k, err := cvKey(b, cat)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	return keys, nil
}

// cvKey returns the grouping of a cross-validation unit. Models and
// systems are grouped by their catalog names: the data files spell one GPU
// or model in several ways (h100_sxm, "H100 SXM 80GB"), and a fold must
// hold all of them out together.
func cvKey(by string, cat *catalog.Catalog) (func(Case) string, error) {
	switch by {
	case "model":
		return func(c Case) string {
			if m, err := cat.Model(c.Model); err == nil {
				return m.Name
			}
			return c.Model
		}, nil
	case "system":
		return func(c Case) string {
			if g, err := cat.GPU(c.System); err == nil {
				return g.Name
			}
			return c.System
		}, nil
	case "campaign":
		return func(c Case) string { return c.Campaign }, nil
	}
	return nil, fmt.Errorf("--cv: %q, want one of model, system, campaign", by)
}

// Fold is one held-out group: fitted on every other group, scored on it.
type Fold struct {
	Held        string  `json:"held"`
	Train       int     `json:"train"`
	Test        Stats   `json:"test"` // the held-out group's errors under the fold's fit
	TrainLoss   float64 `json:"train_loss"`
	Evaluations int     `json:"evaluations"`
}

// CVResult is a cross-validation: each fold's held-out errors, and the
// errors of every held-out prediction together, which is the figure that
// says how the model does on runs it has not seen.
type CVResult struct {
	By      string
	Folds   []Fold
	HeldOut Report
}

// CrossValidate holds out each group of cases (by model, system or
// campaign) in turn, fits the parameters on the rest from start, and
// predicts the held-out group with that fit. progress, when set, hears
// of each fold as it starts.
func CrossValidate(env estimate.Env, start *perf.Params, cases []Case, by string, opt FitOptions, progress func(fold, folds int, held string)) (*CVResult, error) {
	key, err := cvKey(by, env.Catalog)
	if err != nil {
		return nil, err
	}
	names, groups := groupBy(cases, key)
	if len(groups) < 2 {
		return nil, fmt.Errorf("--cv %s: the cases form %d group; cross-validation needs at least 2", by, len(groups))
	}
	if opt.Harness == "" {
		opt.Harness = DefaultHarness
	}
	res := &CVResult{By: by}
	var held []Prediction
	for i, g := range names {
		if progress != nil {
			progress(i+1, len(names), g)
		}
		var train []Case
		for _, other := range names {
			if other != g {
				train = append(train, groups[other]...)
			}
		}
		fit, err := Fit(env, start, train, opt)
		if err != nil {
			return nil, fmt.Errorf("fold %s: %w", g, err)
		}
		e := env
		e.Params = fit.Params
		preds := PredictWith(e, groups[g], opt.Harness)
		held = append(held, preds...)
		st := Stats{Group: g}
		for _, p := range preds {
			st.add(p)
		}
		st.close()
		res.Folds = append(res.Folds, Fold{Held: g, Train: len(train), Test: st, TrainLoss: fit.Loss, Evaluations: fit.Evaluations})
	}
	res.HeldOut = Summarise(held, 0)
	return res, nil
}

// groupBy splits xs by key and lists the keys in order.
func groupBy[T any](xs []T, key func(T) string) ([]string, map[string][]T) {
	groups := map[string][]T{}
	for _, x := range xs {
		k := key(x)
		groups[k] = append(groups[k], x)
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	return names, groups
}
