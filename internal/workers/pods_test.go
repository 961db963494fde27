package workers

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestURLs(t *testing.T) {
	pod := func(name, ip string, phase corev1.PodPhase, ready corev1.ConditionStatus, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.PodStatus{Phase: phase, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want []string
	}{
		{"running and ready", []corev1.Pod{pod("a", "10.0.0.1", corev1.PodRunning, corev1.ConditionTrue, false)}, []string{"http://10.0.0.1:8000"}},
		{"not ready", []corev1.Pod{pod("a", "10.0.0.1", corev1.PodRunning, corev1.ConditionFalse, false)}, nil},
		{"pending", []corev1.Pod{pod("a", "10.0.0.1", corev1.PodPending, corev1.ConditionTrue, false)}, nil},
		{"no IP yet", []corev1.Pod{pod("a", "", corev1.PodRunning, corev1.ConditionTrue, false)}, nil},
		{"going away", []corev1.Pod{pod("a", "10.0.0.1", corev1.PodRunning, corev1.ConditionTrue, true)}, nil},
		{"two pods on one IP are one endpoint", []corev1.Pod{
			pod("a", "10.0.0.1", corev1.PodRunning, corev1.ConditionTrue, false),
			pod("b", "10.0.0.2", corev1.PodRunning, corev1.ConditionTrue, false),
			pod("c", "10.0.0.1", corev1.PodRunning, corev1.ConditionTrue, false)}, []string{"http://10.0.0.1:8000", "http://10.0.0.2:8000"}},
	} {
		if got := URLs(tc.pods, 8000); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseStatic(t *testing.T) {
	for _, tc := range []struct {
		urls []string
		want string // "" is accepted
	}{
		{[]string{"http://a:8000", "https://b:8000/"}, ""},
		{[]string{"a:8000"}, `--w: "a:8000" is not a base URL`},
		{[]string{"http://a:8000", "http://a:8000/"}, `--w: "http://a:8000/" is listed twice`},
		{[]string{"http://a:8000", "http://b:8000", "http://a:8000"}, `"http://a:8000" is listed twice`},
	} {
		_, err := ParseStatic("--w", tc.urls)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.urls, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.urls, err, tc.want)
		}
	}
}
