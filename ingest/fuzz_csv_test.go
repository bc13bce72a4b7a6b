package ingest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxFuzzInput is the largest input the fuzzers decode.
const maxFuzzInput = 64 << 10

// csvFuzzSeeds returns the CSV files under testdata matching glob,
// decompressed. A file over maxFuzzInput contributes its first lines
// (up to 4 KiB) instead.
func csvFuzzSeeds(f *testing.F, glob string) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(repoTestdata(glob))
	require.NoError(f, err)
	require.NotEmpty(f, paths, glob)
	var seeds [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(f, err)
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			require.NoError(f, err)
			data, err = io.ReadAll(zr)
			require.NoError(f, err)
		}
		if len(data) > maxFuzzInput {
			data = data[:4096]
			data = data[:bytes.LastIndexByte(data, '\n')+1]
		}
		seeds = append(seeds, data)
	}
	return seeds
}

// checkDecodeError asserts that a decoder's error, and every record error
// it reported, is a *ParseError.
func checkDecodeError(t *testing.T, err error, s *collectSink) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		require.True(t, errors.As(err, &pe), "not a *ParseError: %v", err)
		require.NotEmpty(t, pe.Error())
	}
	for _, e := range s.errs {
		require.NotNil(t, e.Err)
		require.NotEqual(t, "other", e.Reason(), e.Error())
	}
}

// FuzzDecodeSpanCSV decodes arbitrary span CSVs, with the preset or an
// arbitrary mapping.
func FuzzDecodeSpanCSV(f *testing.F) {
	for _, seed := range csvFuzzSeeds(f, "nezha-*/trace/*.csv.gz") {
		f.Add(seed, "")
	}
	f.Add([]byte(nezhaHeader+"t,s,root,a-579b9bff58-t2dbm,op,1,2,1\nt,s2,s,b-0,op,5,3,\n"), "")
	f.Add([]byte("\ufefftrace\tspan\tsvc\tstart\tdur\tkind\tstatus\tcode\nAB\tCD\tweb\t2024-01-02T03:04:05Z\t1.5ms\tserver\terror\t500\n"),
		"trace_id=trace,span_id=span,service=svc,start=start:ms,duration=dur:us,kind=kind,status=status,status_code=code")
	f.Add([]byte("a,b,c,d\n1,2,x-abcde,1e3\n\"q\"\"\",2,3,4\n"), "trace_id=a,span_id=b,service=c,start=d:s,end=d:s,strip_pod_suffix=true,root=|0")
	f.Add([]byte("timestamp,cmdb_id,span_id,trace_id,duration,type,status_code,operation_name,parent_span\n"+
		"1647705600361000,frontend-0,a1,t1,1500,rpc,14,hipstershop.CartService/GetCart,\n"+
		"1647705600362000,cartservice-0,b1,t1,900,rpc,StatusCode.OK,GetCart,a1\n"),
		"trace_id=trace_id,span_id=span_id,parent_span_id=parent_span,service=cmdb_id,operation=operation_name,start=timestamp:us,duration=duration:us,status_code=status_code,strip_pod_suffix=true")
	f.Add([]byte("t,s,v,st,a,d\n1,2,x,true,1,1\n1,3,x,UNAVAILABLE,1,1\n1,4,x,404,1,1\n"), "trace_id=t,span_id=s,service=v,status=st,start=a,duration=d")
	f.Fuzz(func(t *testing.T, data []byte, mapText string) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		opts := &Options{}
		if m, err := ParseCSVMap(mapText); err == nil && mapText != "" {
			opts.CSVMap = m
		}
		s, err := decodeTestBytes(decodeSpanCSV, "f.csv", bytes.NewReader(data), opts)
		checkDecodeError(t, err, s)
		for _, sp := range s.spans {
			require.NotEmpty(t, sp.TraceID)
			require.NotEmpty(t, sp.SpanID)
			require.NotEmpty(t, sp.Service)
			require.GreaterOrEqual(t, sp.Duration, int64(0))
		}
	})
}

// FuzzDecodeMetricCSV decodes arbitrary metric CSVs under several names.
func FuzzDecodeMetricCSV(f *testing.F) {
	names := []string{"m.csv", "source_50.csv", "destination_90.tsv", "dependency.csv"}
	for _, seed := range csvFuzzSeeds(f, "nezha-*/metric/*.csv") {
		f.Add(seed, uint8(0))
	}
	f.Add([]byte("time,timestamp,frontend_cartservice\n2022-08-22 03:51:20.021338403 +0000 UTC m=+0.527292383,1661140280,0.004\n"), uint8(1))
	f.Add([]byte("time,service,instance,metric,value,labels\n2024-01-02T03:04:05Z,a,b,m,1,\"{x=\"\"1\\n\"\",y=2}\"\n1704164645000,,,m,NaN,\n"), uint8(0))
	f.Add([]byte("ts;pod;x\n1704164645.5;web-7d4b9c8f6-x7k2p;1e-3\n"), uint8(2))
	// The AIOps KPI layout: one sample a row, cmdb_id as the pod.
	aiops, err := os.ReadFile(filepath.Join("testdata", "aiops", "kpi_container.csv"))
	require.NoError(f, err)
	f.Add(aiops, uint8(0))
	f.Add([]byte("timestamp,cmdb_id,kpi_name,value\n1647705600,node-6.adservice2-0,container_threads,12\n1647705660,node-1,system.cpu.pct_usage,\n1647705720,node-.x-0,k,1e400\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, name uint8) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		s, err := decodeTestBytes(decodeMetricCSV, names[int(name)%len(names)], bytes.NewReader(data), nil)
		checkDecodeError(t, err, s)
		for _, sm := range s.samples {
			require.NotEmpty(t, sm.Metric)
			require.NotEmpty(t, sm.Kind)
		}
	})
}

// FuzzParseCSVMap parses arbitrary --csv-map values and round-trips the
// ones it accepts.
func FuzzParseCSVMap(f *testing.F) {
	f.Add("trace_id=TraceID,span_id=SpanID,parent_span_id=ParentID,service=PodName,operation=OperationName,start=StartTimeUnixNano:ns,end=EndTimeUnixNano:ns,duration=Duration:us,root=root,strip_pod_suffix=true")
	f.Add("nezha")
	f.Add("trace_id=a:b,span_id=s,service=v=w,start=x:y:s,end=e,root=|0| root ,kind=k")
	f.Add("trace_id=t,span_id,service=,start=a:h,bogus=1")
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > maxFuzzInput {
			t.Skip()
		}
		m, err := ParseCSVMap(text)
		if err != nil {
			require.Nil(t, m)
			return
		}
		require.NoError(t, m.Validate())
		// Round trip: String renders what ParseCSVMap reads back.
		again, err := ParseCSVMap(m.String())
		require.NoError(t, err, "%q → %q", text, m.String())
		again.Name = m.Name
		require.Equal(t, m, again, "%q → %q", text, m.String())
	})
}
