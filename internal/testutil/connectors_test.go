package testutil

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConnectorSeriesSample(t *testing.T) {
	f, err := os.Open("../../testdata/hotrod-baseline/traces-otlp.json.gz")
	require.NoError(t, err)
	defer f.Close()
	var buf bytes.Buffer
	require.NoError(t, ConnectorSeries(&buf, f, ConnectorConfig{}))
	if p := os.Getenv("CONNECTOR_OUT"); p != "" {
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	}
}
