package events

import "testing"

func TestOrder(t *testing.T) {
	var q Queue
	var got []int
	add := func(at float64, id int) { q.At(at, func(float64) error { got = append(got, id); return nil }) }
	add(2, 1)
	add(1, 2)
	add(2, 3)
	add(0.5, 4)
	for q.Len() > 0 {
		if err := q.Run(); err != nil {
			t.Fatal(err)
		}
	}
	want := []int{4, 2, 1, 3}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	if _, ok := q.Next(); ok {
		t.Fatal("empty queue reports a next action")
	}
}
