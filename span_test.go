package cascade

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"
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

// TestSpanCloneSharesNothing fills every field of a span and clones it:
// the clone is Equal, and none of its strings shares memory with the
// original, so a field added to Span without a line in Clone fails here.
func TestSpanCloneSharesNothing(t *testing.T) {
	var s Span
	v := reflect.ValueOf(&s).Elem()
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("field-%d", i))
		case reflect.Int32, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Slice:
			s.Links = []SpanLink{{TraceID: "lt", SpanID: "ls"}}
		default:
			t.Fatalf("field %s: kind %s not covered by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	c := s.Clone()
	if !s.Equal(&c) {
		t.Fatalf("the clone differs:\n%+v\n%+v", s, c)
	}
	cv := reflect.ValueOf(&c).Elem()
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).Kind() == reflect.String && unsafe.StringData(v.Field(i).String()) == unsafe.StringData(cv.Field(i).String()) {
			t.Errorf("Clone shares %s", v.Type().Field(i).Name)
		}
	}
	if &c.Links[0] == &s.Links[0] || unsafe.StringData(c.Links[0].TraceID) == unsafe.StringData(s.Links[0].TraceID) {
		t.Error("Clone shares the links")
	}
}
