package plannerlivetest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"
)

// Prometheus serves the Prometheus HTTP query API on loopback: a query
// that starts with one of Values' prefixes gets that value as a one-sample
// vector; any other query, or every query while Missing is set, an empty one.
type Prometheus struct {
	*httptest.Server
	Values  map[string]string
	Missing atomic.Bool
}

// NewPrometheus starts the fake; Close it when done.
func NewPrometheus(values map[string]string) *Prometheus {
	p := &Prometheus{Values: values}
	p.Server = httptest.NewServer(http.HandlerFunc(p.query))
	return p
}

func (p *Prometheus) query(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	q := r.Form.Get("query")
	w.Header().Set("Content-Type", "application/json")
	if !p.Missing.Load() {
		for prefix, v := range p.Values {
			if strings.HasPrefix(q, prefix) {
				fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"%s"]}]}}`, time.Now().Unix(), v)
				return
			}
		}
	}
	io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
}
