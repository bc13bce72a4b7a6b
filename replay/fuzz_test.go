package replay

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseScenario feeds scenario documents to the decoder and, when
// one decodes, applies it to a small model: neither may panic.
func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "replay", "*.yaml"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`nodes: {"*": {concurrency: 2}}`))
	f.Add([]byte(`edges: {"api->db.primary": {retry: null}}`))
	f.Add([]byte(`traffic: {kind: closed, users: 3, think_ms: 10}`))
	f.Add([]byte(`edges: {"*": {bulkhead: 2, fallback: {probability: 0.5}}}`))
	f.Add([]byte(`{entries: {"*": {low_priority: 0.3}}, nodes: {"*": {shed_low_at: 2}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64<<10 {
			t.Skip()
		}
		s, err := ParseScenario(b)
		if err != nil {
			return
		}
		_, _, _ = Apply(scenarioModel(), s)
	})
}
