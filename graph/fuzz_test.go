package graph_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

// FuzzReadModel feeds model documents to cascade.DecodeModel. A document
// it accepts must survive EncodeModel → DecodeModel: the re-encoded bytes
// decode to an equal model that encodes to the same bytes.
func FuzzReadModel(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*.json.golden"))
	require.NoError(f, err)
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		require.NoError(f, err)
		if len(data) <= 64<<10 {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"version":1,"entries":[{"node":"a","rate_per_sec":1,"share":1}],"nodes":[{"name":"a","replicas":1,"concurrency":0,"service_ms":{"kind":"const","value":1},"overload":{"base":0,"slope":0,"threshold":1}}],"edges":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip()
		}
		m, err := cascade.DecodeModel(data)
		if err != nil {
			return
		}
		b1, err := cascade.EncodeModel(m)
		require.NoError(t, err)
		m2, err := cascade.DecodeModel(b1)
		require.NoError(t, err, "an accepted model must re-read after encoding:\n%s", b1)
		b2, err := cascade.EncodeModel(m2)
		require.NoError(t, err)
		require.Equal(t, string(b1), string(b2))
		m3, err := cascade.DecodeModel(b2)
		require.NoError(t, err)
		require.Equal(t, m2, m3)
	})
}
