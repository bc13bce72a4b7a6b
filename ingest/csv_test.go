package ingest

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"cascade"

	"github.com/stretchr/testify/require"
)

// nezhaHeader is the header of Nezha's trace files.
const nezhaHeader = "TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,EndTimeUnixNano,Duration\n"

// readGzip returns the decompressed content of a .gz test file.
func readGzip(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	data, err := io.ReadAll(zr)
	require.NoError(t, err)
	return data
}

// distinctServices returns the sorted services of spans.
func distinctServices(spans []cascade.Span) []string {
	set := map[string]bool{}
	for _, s := range spans {
		set[s.Service] = true
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// TestDecodeSpanCSVNezha checks the Nezha preset against counts taken
// from the raw files.
func TestDecodeSpanCSVNezha(t *testing.T) {
	boutique := []string{"adservice", "cartservice", "checkoutservice", "currencyservice", "emailservice",
		"frontend", "paymentservice", "productcatalogservice", "recommendationservice", "shippingservice"}
	trainTicket := []string{"ts-assurance-service", "ts-auth-service", "ts-basic-service", "ts-config-service",
		"ts-contacts-service", "ts-delivery-service", "ts-execute-service", "ts-food-service", "ts-gateway-service",
		"ts-inside-payment-service", "ts-order-other-service", "ts-order-service", "ts-payment-service",
		"ts-preserve-other-service", "ts-preserve-service", "ts-price-service", "ts-route-service",
		"ts-seat-service", "ts-security-service", "ts-station-food-service", "ts-station-service",
		"ts-train-food-service", "ts-train-service", "ts-travel-service", "ts-travel2-service",
		"ts-user-service", "ts-verification-code-service"}
	tests := []struct {
		name     string
		path     string
		services []string
	}{
		{"onlineboutique 05_19", repoTestdata("nezha-onlineboutique", "trace", "05_19_trace.csv.gz"), boutique},
		{"onlineboutique 05_20", repoTestdata("nezha-onlineboutique", "trace", "05_20_trace.csv.gz"), boutique},
		{"trainticket 08_43", repoTestdata("nezha-trainticket", "trace", "08_43_trace.csv.gz"), trainTicket},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Independent expectations from the raw bytes.
			data := readGzip(t, tc.path)
			require.True(t, bytes.HasPrefix(data, []byte(nezhaHeader)))
			wantSpans := bytes.Count(data, []byte("\n")) - 1
			traces := map[string]bool{}
			micros := map[string]int64{} // trace/span → Duration column (µs)
			wantRoots := 0
			for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")[1:] {
				f := strings.Split(line, ",")
				traces[f[0]] = true
				if f[2] == "root" {
					wantRoots++
				}
				us, err := strconv.ParseInt(f[7], 10, 64)
				require.NoError(t, err)
				micros[f[0]+"/"+f[1]] = us
			}

			s, err := decodeTestFile(t, decodeSpanCSV, tc.path, nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Len(t, s.spans, wantSpans)
			gotTraces := map[string]bool{}
			roots := 0
			for _, sp := range s.spans {
				gotTraces[sp.TraceID] = true
				if sp.IsRoot() {
					roots++
				}
				require.NotEmpty(t, sp.SpanID)
				require.True(t, strings.HasPrefix(sp.Instance, sp.Service+"-"), "instance %q of %q", sp.Instance, sp.Service)
				require.Equal(t, cascade.StatusUnset, sp.Status)
				require.Equal(t, cascade.KindUnspecified, sp.Kind)
				require.GreaterOrEqual(t, sp.Duration, int64(0))
				// End-Start in ns agrees with the µs Duration column.
				require.InDelta(t, micros[sp.TraceID+"/"+sp.SpanID], sp.Duration/1000, 1)
			}
			require.Len(t, gotTraces, len(traces))
			require.Equal(t, wantRoots, roots)
			require.Equal(t, tc.services, distinctServices(s.spans))
			require.Equal(t, map[string]int{
				"status: not recorded by format (nezha CSV)": 1,
				"kind: not recorded by format":               1,
			}, s.notes)
			require.Empty(t, s.warns)
		})
	}
}

// TestDecodeSpanCSVNezhaFields checks every field of two Nezha spans.
func TestDecodeSpanCSVNezhaFields(t *testing.T) {
	in := nezhaHeader +
		"04C87EC97BAE041B1B15B3C7676A43CC,989036326b156480,root,frontend-579b9bff58-t2dbm,hipstershop.Frontend/Recv.,1661145517588444295,1661145522996884739,5408440\n" +
		"04c87ec97bae041b1b15b3c7676a43cc,efe7783c8081f484,989036326b156480,productcatalogservice-668d5f85fb-wckp8,hipstershop.ProductCatalogService/GetProduct,1661145517588606568,1661145517597660566,9053\n"
	s, err := decodeTestBytes(decodeSpanCSV, "t.csv", strings.NewReader(in), nil)
	require.NoError(t, err)
	require.Equal(t, []cascade.Span{{
		TraceID: "04c87ec97bae041b1b15b3c7676a43cc", SpanID: "989036326b156480",
		Service: "frontend", Instance: "frontend-579b9bff58-t2dbm", Operation: "hipstershop.Frontend/Recv.",
		Start: 1661145517588444295, Duration: 1661145522996884739 - 1661145517588444295, Status: cascade.StatusUnset,
	}, {
		TraceID: "04c87ec97bae041b1b15b3c7676a43cc", SpanID: "efe7783c8081f484", ParentSpanID: "989036326b156480",
		Service: "productcatalogservice", Instance: "productcatalogservice-668d5f85fb-wckp8",
		Operation: "hipstershop.ProductCatalogService/GetProduct",
		Start:     1661145517588606568, Duration: 1661145517597660566 - 1661145517588606568, Status: cascade.StatusUnset,
	}}, s.spans)
}

// TestServiceFromPod checks Kubernetes pod suffix stripping.
func TestServiceFromPod(t *testing.T) {
	tests := []struct{ pod, want string }{
		{"frontend-579b9bff58-t2dbm", "frontend"},
		{"ts-travel-service-64469b5b48-25zj6", "ts-travel-service"},
		{"currencyservice-cf787dd48-vpjrd", "currencyservice"},
		{"ts-gateway-service-6f6cfc45b-h5m2n", "ts-gateway-service"},
		{"ts-station-food-service-dc4d75dd-fw6ft", "ts-station-food-service"},
		{"ts-basic-service-5dc8d4f9fd-46997", "ts-basic-service"},
		{"ts-basic-service-5dc8d4f9fd-llznp", "ts-basic-service"},
		{"ts-travel2-service-5c66d57d58-6mp2b", "ts-travel2-service"},
		{"productcatalogservice-668d5f85fb-jhwx9", "productcatalogservice"},
		{"nginx-3978374811-x7k2p", "nginx"},            // decimal hash of old ReplicaSets
		{"backup-27851234-x7k2p", "backup"},            // CronJob
		{"fluentd-x7k2p", "fluentd"},                   // DaemonSet
		{"redis-0", "redis"},                           // StatefulSet
		{"ts-mysql-12", "ts-mysql"},                    // StatefulSet
		{"kafka-broker-2", "kafka-broker"},             // StatefulSet
		{"frontend", "frontend"},                       // no suffix
		{"ts-travel-service", "ts-travel-service"},     // no suffix
		{"payment-v2", "payment-v2"},                   // not a suffix
		{"order-cache", "order-cache"},                 // vowels: not generated
		{"api-2023abc", "api-2023abc"},                 // mixed, not an ordinal
		{"frontend-579b9bff58", "frontend-579b9bff58"}, // hash alone is 10 chars, not 5
		{"-abcde", "-abcde"},
		{"", ""},
		{"-", "-"},
		{"a-", "a-"},
		{"svc-123456", "svc-123456"}, // 6 digits: not an ordinal
	}
	for _, tc := range tests {
		t.Run(tc.pod, func(t *testing.T) {
			require.Equal(t, tc.want, serviceFromPod(tc.pod))
		})
	}
}

// TestParseCSVMap checks the --csv-map syntax, its errors and String.
func TestParseCSVMap(t *testing.T) {
	full := &CSVMap{
		TraceID: "TraceID", SpanID: "SpanID", ParentID: "ParentID", Service: "PodName",
		Operation: "OperationName", Start: "StartTimeUnixNano", End: "EndTimeUnixNano", Duration: "Duration",
		StartUnit: time.Nanosecond, EndUnit: time.Nanosecond, DurationUnit: time.Microsecond,
		RootParents: []string{"root"}, StripPodSuffix: true,
	}
	tests := []struct {
		name string
		text string
		want *CSVMap
		err  string
	}{
		{
			name: "nezha layout spelled out",
			text: "trace_id=TraceID,span_id=SpanID,parent_span_id=ParentID,service=PodName,operation=OperationName,start=StartTimeUnixNano:ns,end=EndTimeUnixNano:ns,duration=Duration:us,root=root,strip_pod_suffix=true",
			want: full,
		},
		{
			name: "preset",
			text: " Nezha ",
			want: NezhaCSVMap(),
		},
		{
			name: "spaces, case, aliases, units, roots",
			text: " Trace-ID = tid , span_id=sid, parent_id=pid, service=svc, kind=k, status=st, status_code=code, peer=p, instance=host, name=op, start=ts:ms, duration=d:µs, root=root| 0 |",
			want: &CSVMap{TraceID: "tid", SpanID: "sid", ParentID: "pid", Service: "svc", Kind: "k", Status: "st",
				StatusCode: "code", Peer: "p", Instance: "host", Operation: "op", Start: "ts", StartUnit: time.Millisecond,
				Duration: "d", DurationUnit: time.Microsecond, RootParents: []string{"root", "0", ""}},
		},
		{
			name: "AIOps layout, with the aliases its column names suggest",
			text: "trace_id=trace_id,span_id=span_id,parent_span=parent_span,service=cmdb_id,operation_name=operation_name,start_time=timestamp(µs):us,duration=duration:us,status_code=status_code,strip_pod_suffix=true",
			want: &CSVMap{TraceID: "trace_id", SpanID: "span_id", ParentID: "parent_span", Service: "cmdb_id", Operation: "operation_name",
				Start: "timestamp(µs)", StartUnit: time.Microsecond, Duration: "duration", DurationUnit: time.Microsecond,
				StatusCode: "status_code", StripPodSuffix: true},
		},
		{
			name: "more aliases",
			text: "trace_id=t,span_id=s,service_name=v,span_name=o,start_time=a:s,end_time=b:ms",
			want: &CSVMap{TraceID: "t", SpanID: "s", Service: "v", Operation: "o", Start: "a", StartUnit: time.Second, End: "b", EndUnit: time.Millisecond},
		},
		{
			name: "colon in a column name",
			text: "trace_id=a:b,span_id=s,service=svc,start=x:y:s,end=e",
			want: &CSVMap{TraceID: "a:b", SpanID: "s", Service: "svc", Start: "x:y", StartUnit: time.Second, End: "e", EndUnit: time.Nanosecond},
		},
		{
			name: "trailing comma",
			text: "trace_id=t,span_id=s,service=v,start=a,end=b,",
			want: &CSVMap{TraceID: "t", SpanID: "s", Service: "v", Start: "a", StartUnit: time.Nanosecond, End: "b", EndUnit: time.Nanosecond},
		},
		{
			name: "unknown key",
			text: "trace_id=t,span_id=s,service=v,start=a,end=b,colour=red",
			err:  `unknown key "colour" (want trace_id, span_id, parent_span_id, service, instance, operation, kind, start, end, duration, status, status_code, peer, links, messaging_system, messaging_operation, messaging_destination, messaging_consumer_group, messaging_message_id, messaging_batch_count, messaging_message_bytes, messaging_redelivery, root or strip_pod_suffix)`,
		},
		{
			name: "bad unit",
			text: "trace_id=t,span_id=s,service=v,start=a:h,end=b",
			err:  `key "start": unknown time unit "h" (want ns, us, ms or s)`,
		},
		{
			name: "bad bool",
			text: "trace_id=t,span_id=s,service=v,start=a,end=b,strip_pod_suffix=yes",
			err:  `key "strip_pod_suffix": "yes" is not true or false`,
		},
		{
			name: "no equals",
			text: "trace_id=t,span_id,service=v,start=a,end=b",
			err:  `"span_id": want key=value`,
		},
		{
			name: "twice",
			text: "trace_id=t,span_id=s,service=v,start=a,end=b,parent_id=p,parent_span_id=q",
			err:  `key "parent_span_id" given twice`,
		},
		{
			name: "empty column",
			text: "trace_id=t,span_id=s,service=,start=a,end=b",
			err:  `key "service": empty column name`,
		},
		{
			name: "missing keys",
			text: "span_id=s,service=v",
			err:  "missing key \"trace_id\"\nmissing key \"start\"\nmissing key \"end\" or \"duration\"",
		},
		{
			name: "empty",
			text: "",
			err:  "missing key \"trace_id\"\nmissing key \"span_id\"\nmissing key \"service\"\nmissing key \"start\"\nmissing key \"end\" or \"duration\"",
		},
		{
			name: "every entry problem at once",
			text: "trace_id=t,span_id=s,service=v,start=a:x,end=b,foo=1,strip_pod_suffix=2",
			err:  "key \"start\": unknown time unit \"x\" (want ns, us, ms or s)\nunknown key \"foo\" (want trace_id, span_id, parent_span_id, service, instance, operation, kind, start, end, duration, status, status_code, peer, links, messaging_system, messaging_operation, messaging_destination, messaging_consumer_group, messaging_message_id, messaging_batch_count, messaging_message_bytes, messaging_redelivery, root or strip_pod_suffix)\nkey \"strip_pod_suffix\": \"2\" is not true or false",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseCSVMap(tc.text)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				require.Nil(t, m)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, m)
			// String renders what ParseCSVMap reads back.
			again, err := ParseCSVMap(m.String())
			require.NoError(t, err)
			again.Name = m.Name
			require.Equal(t, m, again)
		})
	}
}

// TestLoadCSVMap checks mapping files.
func TestLoadCSVMap(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		text string
		want *CSVMap
		err  string
	}{
		{
			name: "one entry a line",
			text: "# Jaeger-ish export\ntrace_id = trace id\nspan_id=span, id\n\nservice=svc\nstart=begin:us\nduration=took:ms\n",
			want: &CSVMap{TraceID: "trace id", SpanID: "span, id", Service: "svc", Start: "begin",
				StartUnit: time.Microsecond, Duration: "took", DurationUnit: time.Millisecond},
		},
		{
			name: "preset",
			text: "# the Nezha dataset\nnezha\n",
			want: NezhaCSVMap(),
		},
		{
			name: "errors name the line",
			text: "trace_id=t\nspan_id=s\n# comment\nbogus=1\nservice=v\nstart=a:h\nend=e\n",
			err:  "MAP:4: unknown key \"bogus\" (want trace_id, span_id, parent_span_id, service, instance, operation, kind, start, end, duration, status, status_code, peer, links, messaging_system, messaging_operation, messaging_destination, messaging_consumer_group, messaging_message_id, messaging_batch_count, messaging_message_bytes, messaging_redelivery, root or strip_pod_suffix)\nMAP:6: key \"start\": unknown time unit \"h\" (want ns, us, ms or s)",
		},
		{
			name: "inline syntax on a line",
			text: "# pasted from --csv-map\ntrace_id=TraceID,span_id=SpanID,service=svc,start=ts:us,duration=took:us\n",
			err:  "MAP:2: 5 entries on one line, separated by commas: a map file takes one key=column entry per line (a comma there belongs to the column name)",
		},
		{
			name: "a column name holding a comma and an equals sign",
			text: "trace_id=t\nspan_id=s\nservice=v\nstart=a\nend=e\noperation=op,x=y\n",
			want: &CSVMap{TraceID: "t", SpanID: "s", Service: "v", Start: "a", StartUnit: time.Nanosecond,
				End: "e", EndUnit: time.Nanosecond, Operation: "op,x=y"},
		},
		{
			name: "missing keys name the file",
			text: "trace_id=t\n",
			err:  "MAP: missing key \"span_id\"\nmissing key \"service\"\nmissing key \"start\"\nmissing key \"end\" or \"duration\"",
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strconv.Itoa(i)+".map")
			require.NoError(t, os.WriteFile(path, []byte(tc.text), 0o644))
			m, err := LoadCSVMap(path)
			if tc.err != "" {
				require.EqualError(t, err, strings.ReplaceAll(tc.err, "MAP", path))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, m)
		})
	}
	_, err := LoadCSVMap(filepath.Join(dir, "absent"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestDecodeSpanCSVCustomMap checks a mapping with every column, units
// and spellings.
func TestDecodeSpanCSVCustomMap(t *testing.T) {
	m, err := ParseCSVMap("trace_id=trace,span_id=span,parent_id=parent,service=svc,instance=host,operation=op," +
		"kind=kind,status=status,status_code=code,peer=peer,start=start:ms,end=end:ms,duration=dur:us,root=-")
	require.NoError(t, err)
	in := "trace\tspan\tparent\tsvc\thost\top\tkind\tstatus\tcode\tpeer\tstart\tend\tdur\n" +
		"AB1\tA\t-\tweb\th1\tGET /\tSPAN_KIND_SERVER\tSTATUS_CODE_OK\t200\t\t1700000000000.5\t1700000000010\t\n" +
		"AB1\tB\tA\tweb\th1\tcall db\tclient\terror\t\tpostgres\t2023-11-14T22:13:20.001Z\t\t2500.5\n" +
		"AB1\tC\tA\tweb\th1\tcall x\tweird\tmaybe\t\t\t1700000000002\t\t1.5ms\n" +
		"AB1\tD\tA\tweb\th1\tlate\t3\t\t\t\t1700000000009\t1700000000001\t\n"
	s, err := decodeTestBytes(decodeSpanCSV, "x.tsv", strings.NewReader(in), &Options{CSVMap: m})
	require.NoError(t, err)
	require.Empty(t, s.errs)
	const ms = int64(time.Millisecond)
	require.Equal(t, []cascade.Span{
		{TraceID: "ab1", SpanID: "a", Service: "web", Instance: "h1", Operation: "GET /", Kind: cascade.KindServer,
			Status: cascade.StatusOK, StatusCode: 200, Start: 1700000000000*ms + 500_000, Duration: 10*ms - 500_000},
		{TraceID: "ab1", SpanID: "b", ParentSpanID: "a", Service: "web", Instance: "h1", Operation: "call db",
			Kind: cascade.KindClient, Status: cascade.StatusError, Peer: "postgres", Start: 1700000000001 * ms, Duration: 2500500},
		{TraceID: "ab1", SpanID: "c", ParentSpanID: "a", Service: "web", Instance: "h1", Operation: "call x",
			Status: cascade.StatusUnset, Start: 1700000000002 * ms, Duration: 1500 * int64(time.Microsecond)},
		{TraceID: "ab1", SpanID: "d", ParentSpanID: "a", Service: "web", Instance: "h1", Operation: "late",
			Kind: cascade.KindClient, Status: cascade.StatusUnset, Start: 1700000000009 * ms},
	}, s.spans)
	require.Equal(t, map[string]int{
		"unknown span kind (left empty)":   1,
		"unknown span status (left unset)": 1,
		"negative duration (clamped to 0)": 1,
	}, s.warns)
	require.Empty(t, s.notes)

	// Without a status column the status comes from the status code.
	m, err = ParseCSVMap("trace_id=t,span_id=s,service=v,kind=k,status_code=c,start=a,duration=d")
	require.NoError(t, err)
	s, err = decodeTestBytes(decodeSpanCSV, "x.csv", strings.NewReader("t,s,v,k,c,a,d\n"+
		"1,2,svc,server,503,10,5\n1,3,svc,server,404,10,5\n1,4,svc,client,404,10,5\n"+
		"1,5,svc,,14,10,5\n1,6,svc,,0,10,5\n1,7,svc,,StatusCode.UNAVAILABLE,10,5\n1,8,svc,,77,10,5\n1,9,svc,,,10,5\n"+
		"1,10,svc,,fine,10,5\n"), &Options{CSVMap: m})
	require.NoError(t, err)
	var got []string
	for _, sp := range s.spans {
		got = append(got, fmt.Sprintf("%d %s", sp.StatusCode, sp.Status))
	}
	require.Equal(t, []string{"503 error", "404 ok", "404 error", "14 error", "0 ok", "14 error", "77 unset", "0 unset"}, got)
	require.Equal(t, map[string]int{"status: inferred from status code": 1}, s.notes)
	delete(s.warns, noticeBadYear+" (kept as read)") // small times, for readability
	require.Equal(t, map[string]int{noticeUnknownCode: 1}, s.warns)
	require.Equal(t, []string{`x.csv:10 (byte 188): column "c": "fine" is not a status code: bad value`}, errStrings(s.errs))

	// A status column wins over the code where it says something; an
	// empty cell leaves the code to decide, and a code in the status
	// column is kept as the span's code.
	m, err = ParseCSVMap("trace_id=t,span_id=s,service=v,status=st,status_code=c,start=a,duration=d")
	require.NoError(t, err)
	s, err = decodeTestBytes(decodeSpanCSV, "x.csv", strings.NewReader("t,s,v,st,c,a,d\n"+
		"1,2,svc,ok,503,10,5\n1,3,svc,,503,10,5\n1,4,svc,error,200,10,5\n1,5,svc,UNAVAILABLE,,10,5\n1,6,svc,what,500,10,5\n"), &Options{CSVMap: m})
	require.NoError(t, err)
	got = got[:0]
	for _, sp := range s.spans {
		got = append(got, fmt.Sprintf("%d %s", sp.StatusCode, sp.Status))
	}
	require.Equal(t, []string{"503 ok", "503 error", "200 error", "14 error", "500 error"}, got)
	delete(s.warns, noticeBadYear+" (kept as read)")
	require.Equal(t, map[string]int{noticeUnknownStatus: 1}, s.warns)
	require.Empty(t, s.errs)
}

// errStrings returns the messages of errs.
func errStrings(errs []*ParseError) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// TestDecodeSpanCSVBadInput checks defective inputs and the exact errors,
// notes and warnings they produce.
func TestDecodeSpanCSVBadInput(t *testing.T) {
	row := func(fields ...string) string { return strings.Join(fields, ",") + "\n" }
	good := row("t1", "s1", "root", "frontend-579b9bff58-t2dbm", "op", "1000", "2000", "1")
	badCSVMap, _ := ParseCSVMap("trace_id=TraceID,span_id=SpanID,service=Pod,start=StartTimeUnixNano,end=End,kind=SpanKind")
	tests := []struct {
		name   string
		in     string
		opts   *Options
		spans  int
		errs   []string // every ParseError passed to invalid
		err    string   // the decoder's error
		notes  map[string]int
		warns  map[string]int
		reason error
	}{
		{
			name:  "empty input",
			in:    "",
			notes: map[string]int{"empty input": 1},
		},
		{
			name:  "header only",
			in:    nezhaHeader,
			notes: map[string]int{"empty input": 1},
		},
		{
			name:   "unknown layout",
			in:     "a,b,c\n1,2,3\n",
			err:    `t.csv:1: header: unknown CSV layout "a,b,c": give --csv-map: unsupported content`,
			reason: ErrUnsupported,
		},
		{
			name:   "mapped column missing",
			in:     nezhaHeader + good,
			opts:   &Options{CSVMap: badCSVMap},
			err:    `t.csv:1: header: no column "Pod" for service, "SpanKind" for kind, "End" for end in "TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,EndTimeUnixNano,Duration": missing field`,
			reason: ErrMissingField,
		},
		{
			name:  "bad start",
			in:    nezhaHeader + good + row("t1", "s2", "s1", "frontend-579b9bff58-t2dbm", "op", "12x", "2000", "1") + good,
			spans: 2,
			errs:  []string{`t.csv:3 (byte 141): column "StartTimeUnixNano": "12x" is neither a number nor an RFC 3339 time: bad timestamp`},
			notes: map[string]int{"status: not recorded by format (nezha CSV)": 1, "kind: not recorded by format": 1},
		},
		{
			name: "empty ids and service",
			in:   nezhaHeader + row("", "s2", "root", "p", "op", "1", "2", "1") + row("t", "", "root", "p", "op", "1", "2", "1") + row("t", "s", "root", " ", "op", "1", "2", "1"),
			errs: []string{
				`t.csv:2 (byte 89): column "TraceID": empty trace id: bad trace or span id`,
				`t.csv:3 (byte 109): column "SpanID": empty span id: bad trace or span id`,
				`t.csv:4 (byte 128): column "PodName": empty service: no service name`,
			},
		},
		{
			name:  "end before start",
			in:    nezhaHeader + row("t", "s", "root", "p", "op", "2000", "1000", "1"),
			spans: 1,
			warns: map[string]int{"negative duration (clamped to 0)": 1},
			notes: map[string]int{"status: not recorded by format (nezha CSV)": 1, "kind: not recorded by format": 1},
		},
		{
			name: "no end and no duration",
			in:   nezhaHeader + row("t", "s", "root", "p", "op", "1000", "", ""),
			errs: []string{`t.csv:2 (byte 89): column "EndTimeUnixNano": no end time or duration: missing field`},
		},
		{
			name:  "duration only",
			in:    nezhaHeader + row("t", "s", "root", "p", "op", "1000", "", "7"),
			spans: 1,
			notes: map[string]int{"status: not recorded by format (nezha CSV)": 1, "kind: not recorded by format": 1},
		},
		{
			name: "out of range",
			in:   nezhaHeader + row("t", "s", "root", "p", "op", "99999999999999999999", "1", "1") + row("t", "s", "root", "p", "op", "-9000000000000000000", "9000000000000000000", "1"),
			errs: []string{
				`t.csv:2 (byte 89): column "StartTimeUnixNano": "99999999999999999999" is out of range: bad timestamp`,
				`t.csv:3 (byte 128): column "EndTimeUnixNano": end 9000000000000000000 too far from start -9000000000000000000: bad timestamp`,
			},
		},
		{
			name:  "field count",
			in:    nezhaHeader + "t,s,root,p,op,1,2\n" + good,
			spans: 1,
			errs:  []string{`t.csv:2 (byte 89): record has 7 fields, header has 8: malformed record`},
			notes: map[string]int{"status: not recorded by format (nezha CSV)": 1, "kind: not recorded by format": 1},
		},
		{
			name:  "bad quote",
			in:    nezhaHeader + "t,s,root,p,o\"p,1,2,1\n" + good,
			spans: 1,
			errs:  []string{`t.csv:2 (byte 89): position 13: bare " in non-quoted-field: malformed record`},
			notes: map[string]int{"status: not recorded by format (nezha CSV)": 1, "kind: not recorded by format": 1},
		},
		{
			name:  "repeated header of concatenated files",
			in:    nezhaHeader + good + nezhaHeader + good,
			spans: 2,
			notes: map[string]int{"status: not recorded by format (nezha CSV)": 1, "kind: not recorded by format": 1},
		},
		{
			name:  "byte order mark and CRLF",
			in:    "\ufeff" + strings.ReplaceAll(nezhaHeader+good, "\n", "\r\n"),
			spans: 1,
			notes: map[string]int{"status: not recorded by format (nezha CSV)": 1, "kind: not recorded by format": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodeSpanCSV, "t.csv", strings.NewReader(tc.in), tc.opts)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				require.ErrorIs(t, err, tc.reason)
			} else {
				require.NoError(t, err)
			}
			require.Len(t, s.spans, tc.spans)
			var got []string
			for _, e := range s.errs {
				got = append(got, e.Error())
			}
			require.Equal(t, tc.errs, got)
			if tc.notes == nil {
				tc.notes = map[string]int{}
			}
			if tc.warns == nil {
				tc.warns = map[string]int{}
			}
			require.Equal(t, tc.notes, s.notes)
			// These rows keep times small to stay readable; the warning
			// they draw is TestDataProblemWarnings's (cmd/cascade).
			delete(s.warns, noticeBadYear+" (kept as read)")
			require.Equal(t, tc.warns, s.warns)
		})
	}
}

// TestDecodeSpanCSVStopsWhenTold checks that the decoder stops when the
// sink refuses an invalid record.
func TestDecodeSpanCSVStopsWhenTold(t *testing.T) {
	in := nezhaHeader + "t,s,root,p,op,x,2,1\nt,s,root,p,op,1,2,1\n"
	s := newCollectSink()
	s.failFast = true
	err := decodeSpanCSV("t.csv", strings.NewReader(in), s, &Options{})
	require.ErrorIs(t, err, ErrBadTimestamp)
	require.Empty(t, s.spans)
}

// wantMetricSamples counts, independently of the decoder, the non-empty
// cells of a wide metric CSV outside the skipped columns, and its data rows.
func wantMetricSamples(t *testing.T, path string, skip ...string) (samples, rows int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	for _, rec := range recs[1:] {
		rows++
		for i, v := range rec {
			if v != "" && !slices.Contains(skip, recs[0][i]) {
				_, err := strconv.ParseFloat(v, 64)
				require.NoError(t, err)
				samples++
			}
		}
	}
	return samples, rows
}

// TestDecodeMetricCSVNezha checks Nezha metric files against counts taken
// independently.
func TestDecodeMetricCSVNezha(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		service  string
		instance string
		first    time.Time
		perRow   int
	}{
		{
			name: "onlineboutique pod", path: repoTestdata("nezha-onlineboutique", "metric", "currencyservice-cf787dd48-vpjrd_metric.csv"),
			service: "currencyservice", instance: "currencyservice-cf787dd48-vpjrd",
			first: time.Date(2022, 8, 22, 3, 51, 19, 735555173, time.UTC), perRow: 19,
		},
		{
			name: "trainticket pod", path: repoTestdata("nezha-trainticket", "metric", "ts-travel-service-64469b5b48-25zj6_metric.csv"),
			service: "ts-travel-service", instance: "ts-travel-service-64469b5b48-25zj6",
			first: time.Date(2023, 1, 29, 8, 41, 10, 649486457, time.UTC), perRow: 19,
		},
		{
			name: "front service", path: repoTestdata("nezha-onlineboutique", "metric", "front_service.csv"),
			service: "frontend", first: time.Date(2022, 8, 22, 3, 51, 19, 573905004, time.UTC), perRow: 5,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, rows := wantMetricSamples(t, tc.path, "Time", "TimeStamp", "PodName", "ServiceName")
			require.Equal(t, rows*tc.perRow, want)

			s, err := decodeTestFile(t, decodeMetricCSV, tc.path, nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			require.Len(t, s.samples, want)
			require.Empty(t, s.notes)
			metrics := map[string]bool{}
			for i, sm := range s.samples {
				require.Equal(t, tc.service, sm.Service)
				require.Equal(t, tc.instance, sm.Instance)
				require.Empty(t, sm.Labels)
				metrics[sm.Metric] = true
				if i > 0 {
					require.GreaterOrEqual(t, sm.Time, s.samples[i-1].Time)
				}
			}
			require.Len(t, metrics, tc.perRow)
			require.Equal(t, tc.first.UnixNano(), s.samples[0].Time)
		})
	}
}

// TestDecodeMetricCSVNezhaKinds checks the kinds of Nezha metric columns.
func TestDecodeMetricCSVNezhaKinds(t *testing.T) {
	s, err := decodeTestFile(t, decodeMetricCSV, repoTestdata("nezha-onlineboutique", "metric", "currencyservice-cf787dd48-vpjrd_metric.csv"), nil)
	require.NoError(t, err)
	kinds := map[string]cascade.MetricKind{}
	for _, sm := range s.samples[:19] {
		kinds[sm.Metric] = sm.Kind
	}
	require.Equal(t, map[string]cascade.MetricKind{
		"CpuUsage(m)": cascade.MetricCPU, "CpuUsageRate(%)": cascade.MetricCPU,
		"MemoryUsage(Mi)": cascade.MetricMemory, "MemoryUsageRate(%)": cascade.MetricMemory,
		"SyscallRead": cascade.MetricOther, "SyscallWrite": cascade.MetricOther,
		"NetworkReceiveBytes": cascade.MetricOther, "NetworkTransmitBytes": cascade.MetricOther,
		"PodClientLatencyP90(s)": cascade.MetricLatency, "PodServerLatencyP90(s)": cascade.MetricLatency,
		"PodClientLatencyP95(s)": cascade.MetricLatency, "PodServerLatencyP95(s)": cascade.MetricLatency,
		"PodClientLatencyP99(s)": cascade.MetricLatency, "PodServerLatencyP99(s)": cascade.MetricLatency,
		"PodWorkload(Ops)": cascade.MetricRequestRate, "PodSuccessRate(%)": cascade.MetricSuccessRate,
		"NodeCpuUsageRate(%)": cascade.MetricOther, "NodeMemoryUsageRate(%)": cascade.MetricOther,
		"NodeNetworkReceiveBytes": cascade.MetricOther,
	}, kinds)
	require.Equal(t, cascade.Sample{Time: time.Date(2022, 8, 22, 3, 51, 19, 735555173, time.UTC).UnixNano(),
		Service: "currencyservice", Instance: "currencyservice-cf787dd48-vpjrd", Metric: "CpuUsage(m)",
		Kind: cascade.MetricCPU, Value: 9.154518272498533}, s.samples[0])
}

// TestDecodeMetricCSVLayouts checks the edge, long and wide layouts.
func TestDecodeMetricCSVLayouts(t *testing.T) {
	sec := func(v int64) int64 { return v * int64(time.Second) }
	tests := []struct {
		name    string
		file    string
		in      string
		samples []cascade.Sample
		notes   map[string]int
	}{
		{
			name: "edge latency, source side",
			file: "source_50.csv",
			in: "time,timestamp,frontend_cartservice,checkoutservice_emailservice\n" +
				"2022-08-22 03:51:20.021338403 +0000 UTC m=+0.527292383,1661140280,0.004666667,\n",
			samples: []cascade.Sample{
				{Time: sec(1661140280) + 21338403, Metric: "edge_latency_p50_seconds", Kind: cascade.MetricLatency,
					Labels: `edge="frontend_cartservice",reporter="source"`, Value: 0.004666667},
			},
		},
		{
			name: "edge latency, destination side",
			file: "destination_90.csv",
			in:   "time,timestamp,a_b\n2022-08-22 03:51:20 +0000 UTC,1661140280,0.5\n",
			samples: []cascade.Sample{
				{Time: sec(1661140280), Metric: "edge_latency_p90_seconds", Kind: cascade.MetricLatency,
					Labels: `edge="a_b",reporter="destination"`, Value: 0.5},
			},
		},
		{
			name: "long layout",
			file: "m.csv",
			in: "time,service,instance,metric,value,labels\n" +
				"2024-01-02T03:04:05Z,api,api-1,widgets_made,12,\"{method=\"\"GET\"\", code=\"\"200\"\"}\"\n" +
				"1704164645000,api,,gadgets,3,pool=io\n" +
				"1704164645,api,api-1,gadgets,,\n" +
				"1704164645000000000,,,doodads,1,\n",
			samples: []cascade.Sample{
				{Time: sec(1704164645), Service: "api", Instance: "api-1", Metric: "widgets_made",
					Kind: cascade.MetricOther, Labels: `code="200",method="GET"`, Value: 12},
				{Time: sec(1704164645), Service: "api", Metric: "gadgets", Kind: cascade.MetricOther, Labels: `pool="io"`, Value: 3},
				{Time: sec(1704164645), Metric: "doodads", Kind: cascade.MetricOther, Value: 1},
			},
		},
		{
			name: "long layout with label columns",
			file: "m.csv",
			in:   "Timestamp,Pod,Metric,Value,Zone\n1704164645.25,web-7d4b9c8f6-x7k2p,sprockets,0.5,eu\n",
			samples: []cascade.Sample{
				{Time: sec(1704164645) + 250_000_000, Service: "web", Instance: "web-7d4b9c8f6-x7k2p", Metric: "sprockets",
					Kind: cascade.MetricOther, Labels: `Zone="eu"`, Value: 0.5},
			},
		},
		{
			name: "AIOps KPI layout",
			file: "kpi_container_cpu_usage_seconds.csv",
			in: "timestamp,cmdb_id,kpi_name,value\n" +
				"1647705600,node-6.adservice2-0,container_cpu_usage_seconds,0.0292847\n" +
				"1647705660,frontend-0,istio_requests.grpc.200.0.0,12\n" +
				"1647705720,node-1,system.cpu.pct_usage,23.5\n" +
				"1647705780,os_021,CPU_util_pct,7\n",
			samples: []cascade.Sample{
				{Time: sec(1647705600), Service: "adservice2", Instance: "node-6.adservice2-0", Metric: "container_cpu_usage_seconds",
					Kind: metricKindOf(nil, "container_cpu_usage_seconds"), Value: 0.0292847},
				{Time: sec(1647705660), Service: "frontend", Instance: "frontend-0", Metric: "istio_requests.grpc.200.0.0",
					Kind: metricKindOf(nil, "istio_requests.grpc.200.0.0"), Value: 12},
				{Time: sec(1647705720), Service: "node-1", Instance: "node-1", Metric: "system.cpu.pct_usage",
					Kind: metricKindOf(nil, "system.cpu.pct_usage"), Value: 23.5},
				{Time: sec(1647705780), Service: "os_021", Instance: "os_021", Metric: "CPU_util_pct",
					Kind: metricKindOf(nil, "CPU_util_pct"), Value: 7},
			},
		},
		{
			name: "generic wide with NaN and Inf",
			file: "w.csv",
			in:   "ts,service,host,CpuUsage(m),LatencyP99(s)\n1704164645123,db,h1,NaN,+Inf\n",
			samples: []cascade.Sample{
				{Time: sec(1704164645) + 123_000_000, Service: "db", Instance: "h1", Metric: "CpuUsage(m)", Kind: cascade.MetricCPU},
				{Time: sec(1704164645) + 123_000_000, Service: "db", Instance: "h1", Metric: "LatencyP99(s)", Kind: cascade.MetricLatency},
			},
		},
		{
			name: "pandas index column is ignored",
			file: "w.csv",
			in:   ",timestamp,x\n0,2022-08-22 03:51:20,1\n",
			samples: []cascade.Sample{
				{Time: sec(1661140280), Metric: "x", Kind: cascade.MetricOther, Value: 1},
			},
		},
		{
			name: "semicolons",
			file: "w.csv",
			in:   "time;x\n2024-01-02T03:04:05+01:00;2\n",
			samples: []cascade.Sample{
				{Time: sec(1704164645 - 3600), Metric: "x", Kind: cascade.MetricOther, Value: 2},
			},
		},
		{
			name: "timestamp that disagrees with time",
			file: "adservice-5f6585d649-fnmft_metric.csv",
			in: "Time,TimeStamp,PodName,CpuUsage(m)\n" +
				"2022-08-22 03:51:19.607158889 +0000 UTC m=+0.113112869,1861140279,adservice-5f6585d649-fnmft,1.5\n" +
				"2022-08-22 03:52:19.607158889 +0000 UTC m=+60.113112869,1861140339,adservice-5f6585d649-fnmft,2.5\n" +
				",1661140399,adservice-5f6585d649-fnmft,3.5\n",
			samples: []cascade.Sample{
				{Time: sec(1661140279) + 607158889, Service: "adservice", Instance: "adservice-5f6585d649-fnmft", Metric: "CpuUsage(m)", Kind: cascade.MetricCPU, Value: 1.5},
				{Time: sec(1661140339) + 607158889, Service: "adservice", Instance: "adservice-5f6585d649-fnmft", Metric: "CpuUsage(m)", Kind: cascade.MetricCPU, Value: 2.5},
				{Time: sec(1661140399), Service: "adservice", Instance: "adservice-5f6585d649-fnmft", Metric: "CpuUsage(m)", Kind: cascade.MetricCPU, Value: 3.5},
			},
			notes: map[string]int{`time: column "TimeStamp" disagrees with "Time" by more than 60 s ("Time" used)`: 1},
		},
		{
			name:  "header only",
			file:  "w.csv",
			in:    "time,x\n",
			notes: map[string]int{"empty input": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodeMetricCSV, tc.file, strings.NewReader(tc.in), nil)
			require.NoError(t, err)
			require.Empty(t, s.errs)
			// NaN never equals itself: compare it and Inf by class.
			for i := range s.samples {
				switch v := s.samples[i].Value; {
				case v != v:
					s.samples[i].Value = 0
				case v > 1e308:
					s.samples[i].Value = 0
				}
			}
			require.Equal(t, tc.samples, s.samples)
			if tc.notes == nil {
				tc.notes = map[string]int{}
			}
			require.Equal(t, tc.notes, s.notes)
		})
	}
}

// TestDecodeMetricCSVAIOps reads the AIOps-shaped KPI fixture: one
// sample a row, services from cmdb_id without node and pod suffix.
func TestDecodeMetricCSVAIOps(t *testing.T) {
	path := filepath.Join("testdata", "aiops", "kpi_container.csv")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	rows := bytes.Count(data, []byte("\n")) - 1
	require.Equal(t, 360, rows)
	s, err := decodeTestFile(t, decodeMetricCSV, path, nil)
	require.NoError(t, err)
	require.Empty(t, s.errs)
	require.Len(t, s.samples, rows)
	services := map[string]bool{}
	metrics := map[string]int{}
	for _, sm := range s.samples {
		services[sm.Service] = true
		metrics[sm.Metric]++
		require.Empty(t, sm.Labels)
	}
	require.Equal(t, map[string]bool{"adservice": true, "adservice2": true, "cartservice": true, "checkoutservice": true,
		"currencyservice": true, "frontend": true, "frontend2": true, "paymentservice": true,
		"node-1": true, "node-2": true, "node-3": true, "node-4": true, "node-5": true, "node-6": true}, services)
	require.Equal(t, map[string]int{"container_cpu_usage_seconds": 100, "container_memory_usage_MB": 100,
		"container_threads": 100, "system.cpu.pct_usage": 60}, metrics)
	require.Equal(t, cascade.Sample{Time: 1647705600 * int64(time.Second), Service: "adservice", Instance: "node-6.adservice-0",
		Metric: "container_cpu_usage_seconds", Kind: metricKindOf(nil, "container_cpu_usage_seconds"), Value: 0.0487831}, s.samples[0])
	require.Equal(t, int64(1647705600+9*60)*int64(time.Second), s.samples[len(s.samples)-1].Time)
}

// TestServiceFromCMDB checks the services of AIOps cmdb_id cells.
func TestServiceFromCMDB(t *testing.T) {
	for in, want := range map[string]string{
		"node-6.adservice2-0":       "adservice2",
		"node-1.frontend-0":         "frontend",
		"adservice-0":               "adservice",
		"node-1":                    "node-1",
		"os_021":                    "os_021",
		"docker_003":                "docker_003",
		"web-1.example.com":         "web-1.example.com",
		"node.":                     "node.",
		"frontend-579b9bff58-t2dbm": "frontend",
	} {
		require.Equal(t, want, serviceFromCMDB(in), in)
	}
}

// TestDecodeMetricCSVBadInput checks defective metric inputs and the
// exact errors they produce.
func TestDecodeMetricCSVBadInput(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		in      string
		samples int
		errs    []string
		err     string
		reason  error
	}{
		{
			name:   "dependency graph",
			file:   "dependency.csv",
			in:     "Source,Target,Weight\ncheckoutservice,emailservice,1\n",
			err:    "dependency.csv:1: header: call-graph CSV, not metrics: unsupported content",
			reason: ErrUnsupported,
		},
		{
			name:   "span CSV",
			file:   "05_19_trace.csv",
			in:     nezhaHeader,
			err:    "05_19_trace.csv:1: header: span or log CSV, not metrics: unsupported content",
			reason: ErrUnsupported,
		},
		{
			name:   "no time column",
			file:   "m.csv",
			in:     "a,b\n1,2\n",
			err:    `m.csv:1: header: no time column (time or timestamp) in "a,b": unsupported content`,
			reason: ErrUnsupported,
		},
		{
			name:   "no metric column",
			file:   "m.csv",
			in:     "time,service\n1,a\n",
			err:    `m.csv:1: header: no metric columns in "time,service": unsupported content`,
			reason: ErrUnsupported,
		},
		{
			name:    "bad values",
			file:    "m.csv",
			in:      "time,a,b\n1700000000,x,2\n1700000060,3,1e999\n",
			samples: 2,
			errs: []string{
				`m.csv:2 (byte 9): column "a": "x" is not a number: bad value`,
				`m.csv:3 (byte 24): column "b": "1e999" is not a number: bad value`,
			},
		},
		{
			name: "bad times",
			file: "m.csv",
			in:   "time,timestamp,a\nyesterday,1,2\n,,3\n,1e30,4\n",
			errs: []string{
				`m.csv:2 (byte 17): column "time": "yesterday" is neither a Unix time nor a date and time: bad timestamp`,
				`m.csv:3 (byte 31): column "time": empty time: missing field`,
				`m.csv:4 (byte 35): column "timestamp": "1e30" is out of range: bad timestamp`,
			},
		},
		{
			name:    "long layout defects",
			file:    "m.csv",
			in:      "time,metric,value,labels\n1,,1,\n1,m,z,\n1,m,1,\"a=\"\"x\"\n1,m,1,\"a=1,a=2\"\n1,m,1,\n",
			samples: 1,
			errs: []string{
				`m.csv:2 (byte 25): column "metric": empty metric name: missing field`,
				`m.csv:3 (byte 31): column "value": "z" is not a number: bad value`,
				`m.csv:4 (byte 38): column "labels": label "a": unterminated quoted value: bad value`,
				`m.csv:5 (byte 52): column "labels": label "a" given twice: bad value`,
			},
		},
		{
			name:    "field count",
			file:    "m.csv",
			in:      "time,a\n1,2,3\n1,2\n",
			samples: 1,
			errs:    []string{`m.csv:2 (byte 7): record has 3 fields, header has 2: malformed record`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeTestBytes(decodeMetricCSV, tc.file, strings.NewReader(tc.in), nil)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				require.ErrorIs(t, err, tc.reason)
			} else {
				require.NoError(t, err)
			}
			require.Len(t, s.samples, tc.samples)
			var got []string
			for _, e := range s.errs {
				got = append(got, e.Error())
			}
			require.Equal(t, tc.errs, got)
		})
	}
}

// TestDecodeMetricCSVDependencyFile checks that Nezha's call graph is
// refused as metrics.
// TestCSVEdgeFile checks which file names hold per-edge latencies.
func TestCSVEdgeFile(t *testing.T) {
	tests := []struct {
		name, q, reporter string
	}{
		{"source_50.csv", "50", "source"},
		{"metric/destination_50.csv", "50", "destination"},
		{"rca_data/2022-08-22/metric/source_99.csv.gz", "99", "source"},
		{"Destination_90.TSV.zst", "90", "destination"},
		{"source_.csv", "", ""},
		{"source_50_metric.csv", "", ""},
		{"front_service.csv", "", ""},
		{"sources_50.csv", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, reporter, ok := csvEdgeFile(tc.name)
			require.Equal(t, tc.q != "", ok)
			require.Equal(t, tc.q, q)
			require.Equal(t, tc.reporter, reporter)
		})
	}
}

func TestDecodeMetricCSVDependencyFile(t *testing.T) {
	_, err := decodeTestFile(t, decodeMetricCSV, repoTestdata("nezha-onlineboutique", "metric", "dependency.csv"), nil)
	require.EqualError(t, err, "dependency.csv:1: header: call-graph CSV, not metrics: unsupported content")
	require.True(t, errors.Is(err, ErrUnsupported))
}
