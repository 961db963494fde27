// Package events is a time-ordered queue of deferred actions for the
// discrete-event loops (serving estimates, the simulator). Actions at the
// same time run in the order they were scheduled.
package events

import "container/heap"

// Action runs at its scheduled time.
type Action func(now float64) error

type item struct {
	at  float64
	seq int64
	fn  Action
}

type items []item

func (h items) Len() int { return len(h) }
func (h items) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h items) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *items) Push(x any)   { *h = append(*h, x.(item)) }
func (h *items) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Queue holds scheduled actions.
type Queue struct {
	h   items
	seq int64
}

// At schedules fn at time t.
func (q *Queue) At(t float64, fn Action) {
	q.seq++
	heap.Push(&q.h, item{at: t, seq: q.seq, fn: fn})
}

// Len is the number of pending actions.
func (q *Queue) Len() int { return len(q.h) }

// Next is the time of the earliest action; ok is false when empty.
func (q *Queue) Next() (t float64, ok bool) {
	if len(q.h) == 0 {
		return 0, false
	}
	return q.h[0].at, true
}

// Run pops and runs the earliest action.
func (q *Queue) Run() error {
	it := heap.Pop(&q.h).(item)
	return it.fn(it.at)
}
