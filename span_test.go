package cascade

import (
	"reflect"
	"testing"
)

// TestSpanEqualSeesEveryField changes each field of a span in turn: Equal
// must tell the two apart, so a field added to Span without a line in
// Equal fails here.
func TestSpanEqualSeesEveryField(t *testing.T) {
	base := Span{TraceID: "t", SpanID: "s", Links: []SpanLink{{TraceID: "a", SpanID: "b"}}}
	if c := base; !base.Equal(&c) {
		t.Fatal("a span is not Equal to its copy")
	}
	typ := reflect.TypeOf(base)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		c := base
		c.Links = append([]SpanLink(nil), base.Links...)
		v := reflect.ValueOf(&c).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int32, reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Slice:
			c.Links[0].SpanID = "c"
		default:
			t.Fatalf("field %s: kind %s not covered by this test", f.Name, v.Kind())
		}
		if base.Equal(&c) {
			t.Errorf("Equal does not compare %s", f.Name)
		}
	}
}
