// Package workers finds inference workers' base URLs: a static list, or
// the Running, Ready pods of a label selector. The frontend routes to them
// and the planner scrapes them.
package workers

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Static is a fixed list of workers.
type Static []string

// Workers returns the list.
func (s Static) Workers(context.Context) ([]string, error) { return s, nil }

// Pods discovers workers as the Running, Ready pods matching a label
// selector, at their pod IP and Port.
type Pods struct {
	Client    kubernetes.Interface
	Namespace string
	Selector  string
	Port      int
}

// CheckSelector refuses a label selector that does not parse: every list
// of Pods would fail on it, so it is named before any cluster is asked.
func CheckSelector(field, selector string) error {
	if _, err := labels.Parse(selector); err != nil {
		return fmt.Errorf("%s: %q: %w", field, selector, err)
	}
	return nil
}

// Workers lists the pods' URLs.
func (p Pods) Workers(ctx context.Context) ([]string, error) {
	list, err := p.Client.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: p.Selector})
	if err != nil {
		return nil, fmt.Errorf("list pods %s in %s: %w", p.Selector, p.Namespace, err)
	}
	return URLs(list.Items, p.Port), nil
}

// URLs are the base URLs of the Running, Ready pods that are not going away.
func URLs(pods []corev1.Pod, port int) []string {
	var out []string
	seen := map[string]bool{}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || !ready(&pod) {
			continue
		}
		// Two pods on one IP (a gone pod's IP handed on) are one endpoint.
		u := "http://" + pod.Status.PodIP + ":" + strconv.Itoa(port)
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ParseStatic checks a list of base URLs: each needs an http or https
// scheme and a host, and is listed once (a second entry would silently
// double that worker's share); flag names the option for the error.
func ParseStatic(flag string, urls []string) (Static, error) {
	seen := make(map[string]bool, len(urls))
	for _, u := range urls {
		if !IsHTTPURL(u) {
			return nil, fmt.Errorf("%s: %q is not a base URL; write it with its scheme, e.g. http://127.0.0.1:8000", flag, u)
		}
		k := strings.TrimRight(u, "/")
		if seen[k] {
			return nil, fmt.Errorf("%s: %q is listed twice; list each worker once", flag, u)
		}
		seen[k] = true
	}
	return Static(urls), nil
}

// IsHTTPURL says whether raw is an http or https URL with a host.
func IsHTTPURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
