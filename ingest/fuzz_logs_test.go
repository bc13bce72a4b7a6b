package ingest

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

// checkLogsDecode asserts the decoder contract on any input: a returned
// error is a *ParseError wrapping a sentinel (or a read error), every
// reported record error wraps a sentinel, and every record has a time.
func checkLogsDecode(t *testing.T, err error, c *logCollector) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		require.True(t, errors.As(err, &pe), "not a *ParseError: %v", err)
		require.NotEqual(t, "other", pe.Reason(), pe.Error())
	}
	for _, e := range c.invalid {
		require.NotNil(t, e.Err)
		require.NotEqual(t, "other", e.Reason(), e.Error())
	}
	for _, r := range c.logs {
		require.NotZero(t, r.Time)
		switch r.Severity {
		case "", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL":
		default:
			t.Fatalf("severity %q", r.Severity)
		}
	}
}

func FuzzDecodeOTLPLogsJSON(f *testing.F) {
	seed, err := os.ReadFile("testdata/otlp-logs/logs.jsonl")
	require.NoError(f, err)
	f.Add(seed)
	js, err := (&plog.JSONMarshaler{}).MarshalLogs(otlpLogsFixture())
	require.NoError(f, err)
	f.Add(js)
	for _, s := range []string{
		"",
		"{}\n",
		`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"18446744073709551615"}]}]}]}`,
		`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"severityNumber":99,"body":{"kvlistValue":{}}}]}]}]}`,
		"{\n\"resourceLogs\": [\n]\n}\n{",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > metricsFuzzMax {
			t.Skip()
		}
		c, err := decodeLogsFile(t, decodeOTLPLogsJSON, "fuzz.json", data, nil)
		checkLogsDecode(t, err, c)
	})
}

func FuzzDecodeLogCSV(f *testing.F) {
	seed, err := os.ReadFile(nezhaLogs)
	require.NoError(f, err)
	f.Add(metricsFuzzSeed(seed[:8192]))
	head := "Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log\n"
	for _, s := range []string{
		"",
		head,
		head + "x,-6795364578871345152,n,p-579b9bff58-t2dbm,c,,,\"{\"\"log\"\":\"\"ERROR x\"\"}\"\n",
		head + "2023-01-30 12:00:00,,n,p,c,AB,CD,TraceID: 0123456789abcdef SpanID:\n",
		head + "x,1,2\n\"unterminated",
		"a;b;c\n1;2;3\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > metricsFuzzMax {
			t.Skip()
		}
		c, err := decodeLogsFile(t, decodeLogCSV, "fuzz.csv", data, nil)
		checkLogsDecode(t, err, c)
	})
}
