package fit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// AxisValue is one coordinate of a point.
type AxisValue struct {
	Axis  string
	Value string
}

// Point is a grid point's coordinates, in axis order. In JSON it is an
// object in axis order: {"tier": "p99", "p": 0.2, …}, numbers for the
// numeric axes.
type Point []AxisValue

// Value returns the point's value on the named axis, or "".
func (p Point) Value(axis string) string {
	for _, v := range p {
		if v.Axis == axis {
			return v.Value
		}
	}
	return ""
}

// String returns the point as "axis=value" pairs separated by spaces.
func (p Point) String() string {
	s := make([]string, len(p))
	for i, v := range p {
		s[i] = v.Axis + "=" + v.Value
	}
	return strings.Join(s, " ")
}

// MarshalJSON writes the point as an object in axis order.
func (p Point) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, v := range p {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, v.Axis)
		b = append(b, ':')
		if _, err := strconv.ParseFloat(v.Value, 64); err == nil && v.Axis != ParamTier {
			b = append(b, v.Value...)
		} else {
			b = strconv.AppendQuote(b, v.Value)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a point written by MarshalJSON, keeping the order.
func (p *Point) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("point: want an object")
	}
	*p = (*p)[:0]
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		v, err := dec.Token()
		if err != nil {
			return err
		}
		*p = append(*p, AxisValue{Axis: k.(string), Value: fmt.Sprint(v)})
	}
	_, err := dec.Token()
	return err
}
