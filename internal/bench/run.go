package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuplane/gpuplane/internal/workload"
)

// Options configure a run. Exactly one of Rate, Users or Source drives it.
type Options struct {
	URL, Model string
	Chat       bool
	// Rate in requests per second, open loop; Constant spaces them evenly
	// instead of Poisson.
	Rate     float64
	Constant bool
	// Users closed-loop users, each sending its next request when the last ends.
	Users int
	// Source replays arrivals (a trace); their sizes override ISL/OSL.
	Source workload.Source
	// ISL and OSL draw request sizes for Rate and Users.
	ISL, OSL workload.Dist
	// Duration and Requests bound the run (whichever comes first); in-flight
	// requests then finish, each within RequestTimeout.
	Duration       time.Duration
	Requests       int
	RequestTimeout time.Duration
	// SLO for goodput: TTFT and mean time per output token.
	SLOTTFT, SLOITL time.Duration
	Seed            uint64
	// Progress, if set, is called about once a second.
	Progress func(Progress)
	Client   *http.Client
}

// Progress is the live state of a run.
type Progress struct {
	Elapsed            time.Duration
	Sent, Done, Failed int64
	InFlight           int64
	OutputTokensPerSec float64
}

// maxRecords bounds the requests one run sends and records (under a GiB of
// records); tests lower it.
var maxRecords int64 = 5_000_000

// deadServerFailures is how many requests may fail, with none answered,
// before a run gives up on the server; tests lower it.
var deadServerFailures int64 = 1000

// Run drives the load and returns every request's record and the summary.
func Run(ctx context.Context, o Options) (*Summary, []Record, error) {
	if err := o.check(); err != nil {
		return nil, nil, err
	}
	hc := o.Client
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, MaxConnsPerHost: 0}}
	}
	c := &client{http: hc, url: o.URL, model: o.Model, chat: o.Chat}
	// The arrival loop owns rng; prompts draw from their own source under mu,
	// since requests are made on many goroutines.
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	promptRng := rand.New(rand.NewPCG(o.Seed^0x5bd1e995, 3))
	var mu sync.Mutex
	var recs []Record
	gaps := newGapSample(maxGapSample, o.Seed)
	keptGaps := 0 // gaps the records themselves still hold
	var sent, done, failed, outTok atomic.Int64
	t0 := time.Now()
	runCtx, stop := context.WithTimeout(ctx, o.Duration)
	defer stop()
	var wg sync.WaitGroup
	// send makes a prompt, sends it and records the outcome.
	send := func(isl, osl int) {
		mu.Lock()
		text := prompt(isl, promptRng)
		mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
		defer cancel()
		r := c.do(rctx, t0, text, isl, osl)
		if r.Error != "" {
			failed.Add(1)
		}
		done.Add(1)
		outTok.Add(int64(r.OutputTokens))
		mu.Lock()
		gaps.add(r.ITLs)
		if keptGaps += len(r.ITLs); keptGaps > maxGapSample {
			r.ITLs = nil // the sample has them; the record keeps its scalars
		}
		recs = append(recs, r)
		mu.Unlock()
	}
	launch := func(isl, osl int) {
		sent.Add(1)
		wg.Go(func() { send(isl, osl) })
	}
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	// stopProgress ends the progress goroutine and waits for it, so no
	// callback runs after Run returns.
	stopProgress := func() {
		close(progressDone)
		progressWG.Wait()
	}
	if o.Progress != nil {
		progressWG.Go(func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-progressDone:
					return
				case <-tick.C:
					el := time.Since(t0)
					o.Progress(Progress{Elapsed: el, Sent: sent.Load(), Done: done.Load(), Failed: failed.Load(),
						InFlight: sent.Load() - done.Load(), OutputTokensPerSec: float64(outTok.Load()) / el.Seconds()})
				}
			}
		})
	}
	// A run whose first deadServerFailures requests all failed stops: the
	// server answers none, and the rest would fail as fast.
	dead := func() bool { f := failed.Load(); return f >= deadServerFailures && f == done.Load() }
	// A run records every request it sends; past maxRecords it stops too,
	// so that no run outgrows memory.
	budget := func() bool {
		n := sent.Load()
		return n < maxRecords && (o.Requests == 0 || n < int64(o.Requests)) && !dead()
	}
	switch {
	case o.Users > 0:
		var users sync.WaitGroup
		for u := range o.Users {
			users.Go(func() {
				urng := rand.New(rand.NewPCG(o.Seed+uint64(u)+1, 7))
				for runCtx.Err() == nil && budget() {
					isl, osl := o.ISL.Sample(urng), o.OSL.Sample(urng)
					sent.Add(1)
					send(isl, osl)
				}
			})
		}
		users.Wait()
	default:
		src := o.Source
		if src == nil {
			src = o.arrivals(rng)
		}
		for budget() {
			a, ok, err := src.Next()
			if err != nil {
				stop()
				wg.Wait()
				stopProgress()
				return nil, nil, err
			}
			if !ok {
				break
			}
			at := t0.Add(time.Duration(a.At * float64(time.Second)))
			select {
			case <-runCtx.Done():
			case <-time.After(time.Until(at)):
			}
			if runCtx.Err() != nil {
				break
			}
			launch(a.ISL, a.OSL)
		}
	}
	wg.Wait()
	stopProgress()
	s := summarize(recs, gaps, time.Since(t0), o)
	switch {
	case dead():
		s.Stopped = fmt.Sprintf("stopped after its first %d requests all failed: the server answers none", failed.Load())
	case sent.Load() >= maxRecords && (o.Requests == 0 || int64(o.Requests) > maxRecords):
		s.Stopped = fmt.Sprintf("stopped at %d requests, the most one run records; give --requests or a shorter --duration", maxRecords)
	}
	return s, recs, nil
}

func (o *Options) check() error {
	switch {
	case !(o.Rate >= 0) || o.Rate > 1e6:
		return fmt.Errorf("--rate: %g must be 0 to 1,000,000 req/s", o.Rate)
	case o.Users < 0 || o.Users > 1_000_000:
		return fmt.Errorf("--users: %d must be 0 to 1,000,000", o.Users)
	case o.Requests < 0:
		return fmt.Errorf("--requests: %d must be >= 0 (0: until --duration)", o.Requests)
	case o.Duration > 7*24*time.Hour:
		return fmt.Errorf("--duration: %s, at most a week", o.Duration)
	}
	modes := 0
	if o.Rate > 0 {
		modes++
	}
	if o.Users > 0 {
		modes++
	}
	if o.Source != nil {
		modes++
	}
	if modes != 1 {
		return errors.New("choose one load: --rate R, --users N or --trace FILE")
	}
	if o.URL == "" || o.Model == "" {
		return errors.New("--url and --model are required")
	}
	if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url: %q is not an http(s) URL of a server; e.g. http://127.0.0.1:8000", o.URL)
	}
	if o.SLOTTFT < 0 || o.SLOITL < 0 {
		return fmt.Errorf("--slo-ttft %s and --slo-itl %s: want >= 0 (0: none)", o.SLOTTFT, o.SLOITL)
	}
	if o.Duration <= 0 {
		return fmt.Errorf("--duration: %s, want > 0 (runs are bounded)", o.Duration)
	}
	if o.RequestTimeout < 0 {
		return fmt.Errorf("--timeout: %s, want > 0 (a limit per request)", o.RequestTimeout)
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 10 * time.Minute
	}
	if o.Rate > 0 && o.Rate*o.Duration.Seconds() > float64(maxRecords) {
		return fmt.Errorf("--rate %g for %s is about %.3g requests, more than the %d one run records; lower the rate or --duration", o.Rate, o.Duration, o.Rate*o.Duration.Seconds(), maxRecords)
	}
	if o.Source == nil && (o.ISL == nil || o.OSL == nil) {
		return errors.New("--isl and --osl are required with --rate or --users")
	}
	return nil
}

// arrivals is the open-loop source for Rate: Poisson or evenly spaced.
func (o *Options) arrivals(rng *rand.Rand) workload.Source {
	if o.Constant {
		return &constant{rate: o.Rate, isl: o.ISL, osl: o.OSL, rng: rng, end: o.Duration.Seconds()}
	}
	p, _ := workload.NewPoisson(workload.Constant(o.Rate), o.ISL, o.OSL, o.Duration.Seconds(), rng)
	return p
}

type constant struct {
	rate     float64
	isl, osl workload.Dist
	rng      *rand.Rand
	n        int
	end      float64
}

func (c *constant) Next() (workload.Request, bool, error) {
	at := float64(c.n) / c.rate
	if at >= c.end {
		return workload.Request{}, false, nil
	}
	c.n++
	return workload.Request{At: at, ISL: c.isl.Sample(c.rng), OSL: c.osl.Sample(c.rng)}, true, nil
}
