// Package plannerlivetest holds fakes of the live planner's narrow interfaces.
package plannerlivetest

import (
	"context"
	"time"

	"github.com/gpuplane/gpuplane/internal/planner"
)

// Scaler keeps replicas in memory and counts writes.
type Scaler struct {
	N      int
	Writes int
	Err    error
	// SetErr fails writes only (a 409 or 403 from the scale subresource).
	SetErr error
}

// Replicas implements plannerlive.Scaler.
func (s *Scaler) Replicas(context.Context) (int, error) { return s.N, s.Err }

// SetReplicas implements plannerlive.Scaler.
func (s *Scaler) SetReplicas(_ context.Context, n int) error {
	if s.Err != nil {
		return s.Err
	}
	if s.SetErr != nil {
		return s.SetErr
	}
	s.N, s.Writes = n, s.Writes+1
	return nil
}

// Metrics returns the next observation of a script, then stale ones.
type Metrics struct{ Script []planner.Observation }

// Observe implements plannerlive.MetricsSource.
func (m *Metrics) Observe(_ context.Context, now time.Time) planner.Observation {
	if len(m.Script) == 0 {
		return planner.Observation{Time: float64(now.Unix()), Stale: true, Reason: "script ended"}
	}
	o := m.Script[0]
	m.Script = m.Script[1:]
	o.Time = float64(now.Unix())
	return o
}
