package ingest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protowire"
)

// renumber rewrites the top-level fields from → to of each resourceSpans
// in a TracesData message.
func renumber(t *testing.T, td []byte, from, to protowire.Number) []byte {
	var out []byte
	for b := td; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		require.Positive(t, n)
		rs, m := protowire.ConsumeBytes(b[n:])
		require.Positive(t, m)
		require.Equal(t, protowire.Number(1), num)
		require.Equal(t, protowire.BytesType, typ)
		var inner []byte
		for c := rs; len(c) > 0; {
			num, typ, n := protowire.ConsumeTag(c)
			m := protowire.ConsumeFieldValue(num, typ, c[n:])
			if num == from {
				inner = protowire.AppendTag(inner, to, typ)
				inner = append(inner, c[n:n+m]...)
			} else {
				inner = append(inner, c[:n+m]...)
			}
			c = c[n+m:]
		}
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, inner)
		b = b[n+m:]
	}
	return out
}

// walk lists what the decoder reads of td: resources, scopes and spans.
// (A marshaled copy would not do: ptrace keeps the deprecated field it
// read, unseen, where ptraceotlp clears it.)
func walk(td ptrace.Traces) []string {
	var out []string
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		out = append(out, fmt.Sprint("resource ", rs.Resource().Attributes().AsRaw(), " ", rs.SchemaUrl()))
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			ss := sss.At(j)
			out = append(out, "scope "+ss.Scope().Name()+" "+ss.SchemaUrl())
			sps := ss.Spans()
			for k := range sps.Len() {
				sp := sps.At(k)
				out = append(out, fmt.Sprint("span ", sp.Name(), " ", sp.TraceID(), " ", sp.SpanID()))
			}
		}
	}
	return out
}

// TestMigrateScopeSpansAsExportRequest holds the decoder's unmarshaling
// of a resourceSpans element (ptrace's, after migrateScopeSpans) to what
// ptraceotlp's ExportRequest gives, deprecated instrumentationLibrarySpans
// included, and to its errors.
func TestMigrateScopeSpansAsExportRequest(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "api")
	for i, name := range []string{"first", "second"} {
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("lib")
		sp := ss.Spans().AppendEmpty()
		sp.SetName(name)
		sp.SetTraceID([16]byte{1, byte(i)})
		sp.SetSpanID([8]byte{2, byte(i)})
	}
	cur, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	old := renumber(t, cur, 2, 1000)
	both := append(append([]byte{}, cur...), old...) // a second resourceSpans
	// One resourceSpans with both scopeSpans and the deprecated field:
	// the current field wins.
	_, _, n := protowire.ConsumeTag(cur)
	curRS, _ := protowire.ConsumeBytes(cur[n:])
	_, _, n = protowire.ConsumeTag(old)
	oldRS, _ := protowire.ConsumeBytes(old[n:])
	mixed := protowire.AppendTag(nil, 1, protowire.BytesType)
	mixed = protowire.AppendBytes(mixed, append(append([]byte{}, oldRS...), curRS...))
	tests := []struct {
		name string
		buf  []byte
	}{
		{"current", cur},
		{"deprecated", old},
		{"two elements", both},
		{"both fields", mixed},
		{"truncated", old[:len(old)-3]},
		{"bad tag", append([]byte{0x0a, 0x02, 0xff, 0xff}, old...)},
		{"empty", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The decoder hands over one resourceSpans field at a time.
			var fields [][]byte
			for b := tc.buf; len(b) > 0; {
				_, _, n := protowire.ConsumeTag(b)
				m := -1
				if n > 0 {
					_, m = protowire.ConsumeBytes(b[n:])
				}
				if n < 0 || m < 0 {
					fields = append(fields, b)
					break
				}
				fields = append(fields, b[:n+m])
				b = b[n+m:]
			}
			if len(fields) == 0 {
				fields = [][]byte{nil}
			}
			for _, f := range fields {
				req := ptraceotlp.NewExportRequest()
				wantErr := req.UnmarshalProto(f)
				got, gotErr := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(migrateScopeSpans(f))
				if wantErr != nil {
					require.EqualError(t, gotErr, wantErr.Error())
					continue
				}
				require.NoError(t, gotErr)
				require.Equal(t, walk(req.Traces()), walk(got))
			}
		})
	}
	// The deprecated form really is migrated (not dropped by both).
	got, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(migrateScopeSpans(old))
	require.NoError(t, err)
	require.Equal(t, 2, got.SpanCount())
}
