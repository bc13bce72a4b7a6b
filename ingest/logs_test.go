package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"cascade"
	"cascade/dataset"
)

// nezhaLogs is a slice of Nezha's TrainTicket logs (see its SOURCE.md).
const nezhaLogs = "../testdata/nezha-trainticket/log/09_26_log_head300.csv"

func TestParseLogLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want logLine
	}{
		{
			name: "nezha docker json",
			line: `{"log":"17:25:34.987 INFO  s.s.SecurityServiceImpl#119 TraceID: 11b9d6451b2ff23e695b77253b0a7fd3 SpanID: f0b50f8c908d1dd4 [check][Max][Max In One Hour: 2147483647  Max Not Use: 2147483647]\n","stream":"stdout","time":"2023-01-29T09:25:34.987637228Z"}`,
			want: logLine{severity: "INFO", traceID: "11b9d6451b2ff23e695b77253b0a7fd3", spanID: "f0b50f8c908d1dd4",
				body: "s.s.SecurityServiceImpl#119 [check][Max][Max In One Hour: 2147483647  Max Not Use: 2147483647]"},
		},
		{
			name: "log4j",
			line: "2023-01-29 17:25:34,987 ERROR [main] c.e.Foo - connection refused",
			want: logLine{severity: "ERROR", body: "[main] c.e.Foo - connection refused"},
		},
		{
			name: "logback thread first",
			line: "17:25:34.987 [http-nio-8080-exec-1] WARN  c.e.Bar - slow call trace_id=ABCDEF0123456789ABCDEF0123456789 span_id=0123456789abcdef took 3s",
			want: logLine{severity: "WARN", traceID: "abcdef0123456789abcdef0123456789", spanID: "0123456789abcdef",
				body: "c.e.Bar - slow call took 3s"},
		},
		{
			name: "logfmt level kept in body",
			line: `ts=2023-01-29T09:25:34Z level=error msg="db down"`,
			want: logLine{severity: "ERROR", body: `ts=2023-01-29T09:25:34Z level=error msg="db down"`},
		},
		{
			name: "level word late is not a level",
			line: "request failed with ERROR code",
			want: logLine{body: "request failed with ERROR code"},
		},
		{
			name: "lower-case word is not a level",
			line: "info about the cart",
			want: logLine{body: "info about the cart"},
		},
		{
			name: "id marker without a hex id stays",
			line: "INFO TraceID: none here",
			want: logLine{severity: "INFO", body: "TraceID: none here"},
		},
		{
			name: "bad docker wrapper kept",
			line: `{"log":1}`,
			want: logLine{body: `{"log":1}`},
		},
		{name: "empty", line: "", want: logLine{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := parseLogLine(tc.line, nil)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDetectLogs(t *testing.T) {
	tests := []struct {
		name, file string
		head       string
		want       Format
		err        string
	}{
		{"csv by name", "a.csv", "x", FormatLogCSV, ""},
		{"proto by name", "a.pb", "x", FormatOTLPLogsProto, ""},
		{"json", "a.json", `{"resourceLogs":[]}`, FormatOTLPLogsJSON, ""},
		{"json spans", "a.json", `{"resourceSpans":[]}`, "", "JSON object with no resourceLogs: unknown format"},
		{"proto", "a", "\x0a\x02", FormatOTLPLogsProto, ""},
		{"framed", "a", "\x00\x00\x00\x02\x0a\x00", FormatOTLPLogsProto, ""},
		{"csv", "a", "a,b,c\n1,2,3", FormatLogCSV, ""},
		{"text", "a", "hello", "", "not OTLP logs or a log CSV: unknown format"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := detectLogs(tc.file, []byte(tc.head))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, f)
		})
	}
}

// logCollector is a logSink that keeps what it is given.
type logCollector struct {
	logs    []cascade.LogRecord
	invalid []*ParseError
	infers  []string
	warns   []string
}

func (c *logCollector) log(r *cascade.LogRecord) error { c.logs = append(c.logs, *r); return nil }
func (c *logCollector) invalid_(e *ParseError) error   { c.invalid = append(c.invalid, e); return nil }
func (c *logCollector) infer(n string)                 { c.infers = append(c.infers, n) }
func (c *logCollector) warnAt(k string, _ *ParseError) { c.warns = append(c.warns, k) }

// logCollectorSink adapts logCollector (whose field is named invalid).
type logCollectorSink struct{ *logCollector }

func (s logCollectorSink) invalid(e *ParseError) error { return s.invalid_(e) }

func decodeLogsFile(t *testing.T, dec logDecodeFunc, name string, data []byte, opts *Options) (*logCollector, error) {
	t.Helper()
	c := &logCollector{}
	if opts == nil {
		opts = &Options{}
	}
	err := dec(name, bytes.NewReader(data), logCollectorSink{c}, opts)
	return c, err
}

func TestDecodeLogCSVNezha(t *testing.T) {
	data, err := os.ReadFile(nezhaLogs)
	require.NoError(t, err)
	c, err := decodeLogsFile(t, decodeLogCSV, "09_26_log.csv", data, nil)
	require.NoError(t, err)
	require.Empty(t, c.invalid)
	require.Len(t, c.logs, 300)
	require.Equal(t, cascade.LogRecord{
		Time:     1674984334987637228,
		Service:  "ts-security-service",
		Instance: "ts-security-service-cb9788d56-mrzv2",
		Severity: "INFO",
		TraceID:  "11b9d6451b2ff23e695b77253b0a7fd3",
		SpanID:   "f0b50f8c908d1dd4",
		Body:     "s.s.SecurityServiceImpl#119 [check][Max][Max In One Hour: 2147483647  Max Not Use: 2147483647]",
	}, c.logs[0])
	sev := map[string]int{}
	for _, r := range c.logs {
		sev[r.Severity]++
		require.NotEmpty(t, r.TraceID)
		require.NotContains(t, r.Body, "TraceID:")
	}
	require.Equal(t, map[string]int{"INFO": 282, "WARN": 16, "ERROR": 2}, sev)
}

// TestDecodeLogCSVFallbackTime: Nezha's exception lines hold garbage in
// TimeUnixNano and a zone-less time in Timestamp, which is read instead,
// with a warning.
func TestDecodeLogCSVFallbackTime(t *testing.T) {
	data := "Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log\n" +
		"2023-01-30T12:01:02.090,-6795364578871345152,n,ts-travel-service-64469b5b48-5rjvb,c,3227b61562530dcfe1ffcf08ab2e1c4d,0011223344556677,ERROR boom\n"
	c, err := decodeLogsFile(t, decodeLogCSV, "12_01.csv", []byte(data), nil)
	require.NoError(t, err)
	require.Empty(t, c.invalid)
	require.Len(t, c.logs, 1)
	require.Equal(t, int64(1675080062090000000), c.logs[0].Time)
	require.Equal(t, "ERROR", c.logs[0].Severity)
	require.Equal(t, []string{`log time empty or outside the years 2000-2100 (read from column "Timestamp")`}, c.warns)
}

func TestDecodeLogCSVMap(t *testing.T) {
	data := "ts,pod,level,msg\n" +
		"1674984334987,cart-579b9bff58-t2dbm,error,payment declined for order 1\n" +
		"1674984334990,cart-579b9bff58-t2dbm,,WARN retrying order 2\n"
	m, err := ParseLogCSVMap("time=ts:ms,service=pod,severity=level,body=msg,strip_pod_suffix=true")
	require.NoError(t, err)
	c, err := decodeLogsFile(t, decodeLogCSV, "app.csv", []byte(data), &Options{LogCSVMap: m})
	require.NoError(t, err)
	require.Equal(t, []cascade.LogRecord{
		{Time: 1674984334987000000, Service: "cart", Instance: "cart-579b9bff58-t2dbm", Severity: "ERROR", Body: "payment declined for order 1"},
		{Time: 1674984334990000000, Service: "cart", Instance: "cart-579b9bff58-t2dbm", Severity: "WARN", Body: "retrying order 2"},
	}, c.logs)
}

func TestParseLogCSVMapErrors(t *testing.T) {
	tests := []struct{ in, err string }{
		{"time=t:hours,body=b", `key "time": unknown time unit "hours" (want ns, us, ms or s)`},
		{"service=s", "missing key \"time\"\nmissing key \"body\""},
		{"time=t,body=b,body=c", `key "body" given twice`},
		{"time=t,body=b,colour=c", `unknown key "colour" (want time, time_fallback, service, instance, severity, trace_id, span_id, body or strip_pod_suffix)`},
		{"time=t,body", `"body": want key=value`},
		{"time=t,body=", `key "body": empty column name`},
		{"time=t,body=b,strip_pod_suffix=maybe", `key "strip_pod_suffix": "maybe" is not true or false`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseLogCSVMap(tc.in)
			require.EqualError(t, err, tc.err)
		})
	}
	m, err := ParseLogCSVMap(" Nezha ")
	require.NoError(t, err)
	require.Equal(t, NezhaLogCSVMap(), m)
}

func TestDecodeLogCSVErrors(t *testing.T) {
	head := "Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log\n"
	tests := []struct {
		name string
		data string
		errs []string // invalid records
		err  string   // the decoder's own error
	}{
		{name: "bad time and timestamp", data: head + "x,12ab,n,p-1,c,,,hello\n",
			errs: []string{`09.csv:2 (byte 65): column "Timestamp": "x" is neither a number nor an RFC 3339 time: bad timestamp`}},
		{name: "empty time and timestamp", data: head + ",,n,p-1,c,,,hello\n",
			errs: []string{`09.csv:2 (byte 65): column "TimeUnixNano": time "" is unusable and column "Timestamp" is empty: bad timestamp`}},
		{name: "short row", data: head + "x,1\n",
			errs: []string{`09.csv:2 (byte 65): record has 2 fields, header has 8: malformed record`}},
		{name: "bad quote", data: head + "x,1,n,p,c,,,\"a\"b\"\n",
			errs: []string{`09.csv:2 (byte 65): position 15: extraneous or missing " in quoted-field: malformed record`}},
		{name: "unknown layout", data: "a,b,c\n1,2,3\n",
			err: `09.csv:1: header: unknown log CSV layout "a,b,c": give a log column map: unsupported content`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := decodeLogsFile(t, decodeLogCSV, "09.csv", []byte(tc.data), nil)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, e := range c.invalid {
				got = append(got, e.Error())
			}
			require.Equal(t, tc.errs, got)
		})
	}
}

// otlpLogsFixture builds two resources' records with pdata.
func otlpLogsFixture() plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "checkout")
	rl.Resource().Attributes().PutStr("service.instance.id", "checkout-1")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	lr := lrs.AppendEmpty()
	lr.SetTimestamp(pcommon.Timestamp(1700000000000000001))
	lr.SetSeverityNumber(plog.SeverityNumberError2)
	lr.Body().SetStr("charge failed for card 4242")
	lr.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	lr.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	lr = lrs.AppendEmpty()
	lr.SetObservedTimestamp(pcommon.Timestamp(1700000000000000002))
	lr.SetSeverityText("Warning")
	lr.Body().SetStr("retry 2")
	lr = lrs.AppendEmpty() // no time: invalid
	lr.Body().SetStr("lost")
	rl = ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("k8s.pod.name", "cart-579b9bff58-t2dbm")
	lr = rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.Timestamp(1700000000000000003))
	lr.Body().SetStr("12:00:00.000 DEBUG cache warm")
	return ld
}

var otlpLogsWant = []cascade.LogRecord{
	{Time: 1700000000000000001, Service: "checkout", Instance: "checkout-1", Severity: "ERROR",
		TraceID: "0102030405060708090a0b0c0d0e0f10", SpanID: "0102030405060708", Body: "charge failed for card 4242"},
	{Time: 1700000000000000002, Service: "checkout", Instance: "checkout-1", Severity: "WARN", Body: "retry 2"},
	{Time: 1700000000000000003, Service: "cart", Instance: "cart-579b9bff58-t2dbm", Severity: "DEBUG", Body: "cache warm"},
}

func TestDecodeOTLPLogs(t *testing.T) {
	ld := otlpLogsFixture()
	js, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	pb, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	framed := binary.BigEndian.AppendUint32(nil, uint32(len(pb)))
	framed = append(framed, pb...)
	framed = binary.BigEndian.AppendUint32(framed, uint32(len(pb)))
	framed = append(framed, pb...)
	tests := []struct {
		name    string
		dec     logDecodeFunc
		data    []byte
		copies  int
		invalid []string
	}{
		{"json lines", decodeOTLPLogsJSON, append(append(append([]byte{}, js...), '\n'), js...), 2, []string{
			"logs.json:1: resourceLogs[0].scopeLogs[0].logRecords[2]: neither timeUnixNano nor observedTimeUnixNano is set: bad timestamp",
			"logs.json:2 (byte " + strconv.Itoa(len(js)+1) + "): resourceLogs[0].scopeLogs[0].logRecords[2]: neither timeUnixNano nor observedTimeUnixNano is set: bad timestamp",
		}},
		{"proto", decodeOTLPLogsProto, pb, 1, []string{
			"logs.json (byte 0): resourceLogs[0].scopeLogs[0].logRecords[2]: neither timeUnixNano nor observedTimeUnixNano is set: bad timestamp",
		}},
		{"framed", decodeOTLPLogsProto, framed, 2, []string{
			"logs.json (byte 0): resourceLogs[0].scopeLogs[0].logRecords[2]: neither timeUnixNano nor observedTimeUnixNano is set: bad timestamp",
			"logs.json (byte " + strconv.Itoa(len(pb)+4) + "): resourceLogs[0].scopeLogs[0].logRecords[2]: neither timeUnixNano nor observedTimeUnixNano is set: bad timestamp",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := decodeLogsFile(t, tc.dec, "logs.json", tc.data, nil)
			require.NoError(t, err)
			var want []cascade.LogRecord
			for range tc.copies {
				want = append(want, otlpLogsWant...)
			}
			require.Equal(t, want, c.logs)
			var got []string
			for _, e := range c.invalid {
				got = append(got, e.Error())
			}
			require.Equal(t, tc.invalid, got)
		})
	}
}

func TestDecodeOTLPLogsErrors(t *testing.T) {
	tests := []struct {
		name    string
		dec     logDecodeFunc
		data    string
		invalid []string
		err     string
	}{
		{name: "bad json line", dec: decodeOTLPLogsJSON,
			data:    `{"resourceLogs":[]}` + "\n" + `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"x"}]}]}]}` + "\n",
			invalid: []string{"in.json:2 (byte 20): "}},
		{name: "truncated frame", dec: decodeOTLPLogsProto, data: "\x00\x00\x00\x09\x0a",
			err: "in.json (byte 0): frame of 9 bytes, 1 left: malformed record"},
		{name: "short length", dec: decodeOTLPLogsProto, data: "\x00\x00",
			err: "in.json (byte 0): truncated frame length: malformed record"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := decodeLogsFile(t, tc.dec, "in.json", []byte(tc.data), nil)
			if tc.err != "" {
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				pe.File = "in.json"
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, c.invalid, len(tc.invalid))
			for i, e := range c.invalid {
				e.File = "in.json"
				require.True(t, strings.HasPrefix(e.Error(), tc.invalid[i]), e.Error())
				require.ErrorIs(t, e, ErrSyntax)
			}
		})
	}
}

// runLogs ingests the Nezha log slice (gzipped, to go through the same
// decompression as trace files) and returns the dataset directory.
func runLogs(t *testing.T, out string, runRows int) *Summary {
	t.Helper()
	data, err := os.ReadFile(nezhaLogs)
	require.NoError(t, err)
	dir := t.TempDir()
	gz := filepath.Join(dir, "09_26_log.csv.gz")
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(gz, b.Bytes(), 0o644))
	cfg := DefaultConfig()
	cfg.Logs = []string{gz, "testdata/otlp-logs/logs.jsonl"}
	cfg.Out = out
	cfg.RunRows = runRows
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	return sum
}

func TestRunLogs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ds")
	sum := runLogs(t, out, 0)
	require.Equal(t, int64(304), sum.Logs)
	require.Equal(t, int64(3), sum.ErrorLogs)
	require.Equal(t, int64(303), sum.TracedLogs)
	require.Equal(t, int64(300), sum.Inputs[0].Logs)
	require.Equal(t, FormatLogCSV, sum.Inputs[0].Format)
	require.Equal(t, FormatOTLPLogsJSON, sum.Inputs[1].Format)
	require.Contains(t, sum.LogServices, "ts-basic-service")
	require.NotContains(t, sum.LogServices, "ts-basic-service-5b7c9d8f6d-4wz7h")
	require.Positive(t, sum.LogTemplates)
	require.Less(t, sum.LogTemplates, 100)
	_, err := os.Stat(filepath.Join(out, dataset.SpansFile))
	require.NoError(t, err, "a dataset always has spans.parquet")

	var got []cascade.LogRecord
	require.NoError(t, dataset.ReadLogs(out, func(r *cascade.LogRecord) error {
		got = append(got, cloneLog(r))
		return nil
	}))
	require.Len(t, got, 304)
	for i := 1; i < len(got); i++ {
		require.LessOrEqual(t, dataset.CompareLogs(&got[i-1], &got[i]), 0, "row %d out of order", i)
	}
	tmpl := map[int32]string{}
	for _, r := range got {
		require.Positive(t, r.TemplateID)
		require.NotEmpty(t, r.Template)
		if prev, ok := tmpl[r.TemplateID]; ok {
			require.Equal(t, prev, r.Template)
		}
		tmpl[r.TemplateID] = r.Template
	}
	require.Len(t, tmpl, sum.LogTemplates)

	again, err := Summarize(out)
	require.NoError(t, err)
	require.Equal(t, sum.Logs, again.Logs)
	require.Equal(t, sum.LogTemplates, again.LogTemplates)
	require.Equal(t, sum.LogRange, again.LogRange)

	// The same inputs give a byte-identical logs.parquet, also when the
	// sort spills runs of 50 rows to disk and merges them.
	out2 := filepath.Join(t.TempDir(), "ds")
	runLogs(t, out2, 50)
	a, err := os.ReadFile(filepath.Join(out, dataset.LogsFile))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(out2, dataset.LogsFile))
	require.NoError(t, err)
	require.Equal(t, a, b)
}

func TestRunLogsDuplicates(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ds")
	cfg := DefaultConfig()
	cfg.Logs = []string{nezhaLogs, nezhaLogs}
	cfg.Out = out
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, int64(300), sum.Logs)
	require.Equal(t, int64(300), sum.DuplicateLogs)
	require.Contains(t, sum.Notices, Notice{Kind: noticeDupLog, Count: 300,
		Position: "service ts-auth-service at " + firstAuthTime(t),
		Action:   "dropped: the first stored wins"})
}

func TestRunLogsBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	require.NoError(t, os.WriteFile(bad, []byte(
		"Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log\n"+
			"x,1674984334987637228,n,a-1,c,,,fine\n"+
			"x,soon,n,a-1,c,,,not fine\n"), 0o644))
	out := filepath.Join(dir, "ds")
	cfg := DefaultConfig()
	cfg.Logs = []string{bad}
	cfg.Out = out
	_, err := Run(context.Background(), cfg)
	require.EqualError(t, err, bad+`:3 (byte 102): column "Timestamp": "x" is neither a number nor an RFC 3339 time: bad timestamp`)
	_, serr := os.Stat(out)
	require.True(t, errors.Is(serr, fs.ErrNotExist), "nothing partial is written")

	cfg.SkipInvalid = true
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, int64(1), sum.Logs)
	require.Equal(t, map[string]int64{"bad timestamp": 1}, sum.Skipped)
	require.Contains(t, sum.Notices, Notice{Kind: "invalid record: bad timestamp", Count: 1, File: bad,
		Position: `line 3 byte 102 column "Timestamp"`, Action: "dropped (--skip-invalid)"})
}

func TestReadLogsMissing(t *testing.T) {
	err := dataset.ReadLogs(t.TempDir(), func(*cascade.LogRecord) error { return nil })
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// firstAuthTime is the earliest time of ts-auth-service in the slice.
func firstAuthTime(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(nezhaLogs)
	require.NoError(t, err)
	c, err := decodeLogsFile(t, decodeLogCSV, "x.csv", data, nil)
	require.NoError(t, err)
	var first int64
	var svc string
	for _, r := range c.logs {
		if svc == "" || r.Service < svc || (r.Service == svc && r.Time < first) {
			svc, first = r.Service, r.Time
		}
	}
	require.Equal(t, "ts-auth-service", svc)
	return strconv.FormatInt(first, 10)
}
