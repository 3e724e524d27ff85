package speech

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Engine error codes reach clients, but the metric's code label stays a closed set.
func TestFailedCodeLabelStaysClosed(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	for i := 0; i < 200; i++ {
		m.failed(fmt.Sprintf("Engine.Code%d", i))
	}
	m.failed(CodeTimeout)
	m.failed(CodeGenerationFailed)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "mediagen_speech_finished_total" {
			continue
		}
		if n := len(f.GetMetric()); n != 3 {
			t.Fatalf("%d series after 200 distinct engine codes, want 3 (upstream, timeout, generation failed)", n)
		}
		return
	}
	t.Fatal("no mediagen_speech_finished_total series")
}
