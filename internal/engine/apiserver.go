package engine

// APIServer is a worker's API server in front of an engine: a request
// spends a parallel part of its handling on its own, then queues for the
// serial part on the server's one thread, in arrival order. Bursts queue
// here. The estimate, the simulator and the emulator all admit requests
// through it (perf.Worker.FrontendSplit gives the two parts).
type APIServer struct{ busyUntil float64 }

// Admit returns when a request arriving at now leaves the server.
func (a *APIServer) Admit(now, parallel, serial float64) float64 {
	start := max(now+parallel, a.busyUntil)
	a.busyUntil = start + serial
	return a.busyUntil
}
