package engine

// fifo is a slice-backed queue that reuses its storage.
type fifo struct {
	items []*Request
	head  int
}

func (q *fifo) len() int { return len(q.items) - q.head }

func (q *fifo) push(r *Request) {
	if q.head > 0 && q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	q.items = append(q.items, r)
}

func (q *fifo) peek() *Request { return q.items[q.head] }

// pushFront puts a preempted request back at the head of the queue.
func (q *fifo) pushFront(r *Request) {
	if q.head > 0 {
		q.head--
		q.items[q.head] = r
		return
	}
	q.items = append([]*Request{r}, q.items...)
}

func (q *fifo) pop() *Request {
	r := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	return r
}

// decodeHeap orders decoding requests by the step they finish at.
type decodeHeap []*Request

func (h decodeHeap) Len() int           { return len(h) }
func (h decodeHeap) Less(i, j int) bool { return h[i].finishStep < h[j].finishStep }
func (h decodeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}
func (h *decodeHeap) Push(x any) {
	r := x.(*Request)
	r.heapIndex = len(*h)
	*h = append(*h, r)
}
func (h *decodeHeap) Pop() any {
	old := *h
	n := len(old)
	r := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return r
}
