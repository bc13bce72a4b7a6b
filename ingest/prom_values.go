package ingest

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// promHistPoint is the part of a native histogram point that is kept.
type promHistPoint struct {
	count, sum float64
	bare       bool // count or sum was a JSON number, not a string
}

// parsePromHistogramPoint parses [t, {"count": "n", "sum": "s", ...}].
func parsePromHistogramPoint(raw string) (int64, promHistPoint, error) {
	var h promHistPoint
	var pair []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &pair); err != nil || len(pair) != 2 {
		return 0, h, errorf(ErrSyntax, "want [time, histogram], got %.40s", raw)
	}
	t, err := parsePromTime(string(pair[0]))
	if err != nil {
		return 0, h, err
	}
	var obj struct {
		Count json.RawMessage `json:"count"`
		Sum   json.RawMessage `json:"sum"`
	}
	if err := json.Unmarshal(pair[1], &obj); err != nil {
		return 0, h, errorf(ErrSyntax, "histogram: %v", err)
	}
	if h.count, err = parsePromValue(string(obj.Count)); err != nil {
		return 0, h, err
	}
	if h.sum, err = parsePromValue(string(obj.Sum)); err != nil {
		return 0, h, err
	}
	h.bare = isBareNumber(string(obj.Count)) || isBareNumber(string(obj.Sum))
	return t, h, nil
}

// parsePromPoint parses one [time, "value"] pair, already known to be
// valid JSON.
func parsePromPoint(raw string) (int64, float64, error) {
	var elems [2]string
	n := 0
	err := eachJSONElement(raw, func(i int, e string) error {
		if i < 2 {
			elems[i] = e
		}
		n++
		return nil
	})
	if err != nil || n != 2 {
		return 0, 0, errorf(ErrSyntax, "want [time, value], got %.40s", raw)
	}
	t, err := parsePromTime(elems[0])
	if err != nil {
		return 0, 0, err
	}
	v, err := parsePromValue(elems[1])
	if err != nil {
		return 0, 0, err
	}
	return t, v, nil
}

// parsePromTime converts a JSON number of seconds to Unix nanoseconds from
// its digits, so that millisecond (or finer) times are exact. Digits past
// nanoseconds are dropped.
func parsePromTime(s string) (int64, error) {
	s = trimJSONSpace(s)
	if len(s) > 0 && s[0] == '"' {
		// Some compatible stores quote times; accept what parses.
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	if ns, ok := secondsToNanos(s); ok {
		return ns, nil
	}
	return 0, errorf(ErrBadTimestamp, "time %.40q", s)
}

// secondsToNanos parses decimal seconds ("1796212102", "1435781451.781",
// "-1.5", "1.7e9") into nanoseconds, exactly when there is no exponent.
func secondsToNanos(s string) (int64, bool) {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		// A huge exponent would make big.Rat build a huge number.
		if exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+")); err != nil || exp > 30 || exp < -30 {
			return 0, false
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return 0, false
		}
		r.Mul(r, big.NewRat(1e9, 1))
		q := new(big.Int).Quo(r.Num(), r.Denom())
		if !q.IsInt64() {
			return 0, false
		}
		return q.Int64(), true
	}
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return 0, false
	}
	sec, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || sec > math.MaxInt64/1_000_000_000 {
		return 0, false
	}
	ns := sec * 1_000_000_000
	if len(frac) > 9 {
		frac = frac[:9]
	}
	if frac != "" {
		f, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		if ns > math.MaxInt64-f {
			return 0, false
		}
		ns += f
	}
	if neg {
		ns = -ns
	}
	return ns, true
}

// allDigits reports whether s holds only ASCII digits (true for "").
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// bareValue warns when the value of a [time, value] pair that parsed is a
// JSON number: the API writes values as strings (so that NaN and Inf can be
// said), and a number there means the answer was rewritten by something.
func (d *promAPIDecoder) bareValue(pair string) {
	pair = trimJSONSpace(pair)
	if i := strings.LastIndexByte(pair, ','); i >= 0 && isBareNumber(strings.TrimSuffix(pair[i+1:], "]")) {
		d.s.warn(warnPromNumber)
	}
}

// isBareNumber reports whether a JSON value is a number, not a string.
func isBareNumber(s string) bool {
	s = trimJSONSpace(s)
	return len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9')
}

// parsePromValue parses a sample value: a JSON string holding a float
// (including "NaN", "+Inf", "-Inf"), or a bare number.
func parsePromValue(s string) (float64, error) {
	s = trimJSONSpace(s)
	switch {
	case len(s) >= 2 && s[0] == '"' && strings.IndexByte(s[1:len(s)-1], '\\') < 0:
		s = s[1 : len(s)-1]
	case len(s) > 0 && s[0] == '"':
		var u string
		if err := json.Unmarshal([]byte(s), &u); err != nil {
			return 0, errorf(ErrBadValue, "value %.40s", s)
		}
		s = u
	case len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9'):
	default:
		return 0, errorf(ErrBadValue, "value %.40s", s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, errorf(ErrBadValue, "value %.40q", s)
	}
	return v, nil
}

// trimJSONSpace trims JSON white space from both ends.
func trimJSONSpace[T ~string | ~[]byte](b T) T {
	i, j := 0, len(b)
	for i < j && isJSONSpace(b[i]) {
		i++
	}
	for j > i && isJSONSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

// eachJSONElement calls fn with each element of a JSON array, already
// known to be valid JSON, in order. It returns an ErrSyntax error when
// the value is not an array, and fn's first error.
func eachJSONElement(raw string, fn func(i int, elem string) error) error {
	b := trimJSONSpace(raw)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return errorf(ErrSyntax, "want an array, got %.40s", raw)
	}
	pos, end := 1, len(b)-1
	for i := 0; ; i++ {
		for pos < end && isJSONSpace(b[pos]) {
			pos++
		}
		if pos >= end {
			return nil
		}
		stop := skipJSONValue(b, pos, end)
		if stop <= pos {
			return errorf(ErrSyntax, "bad array element at byte %d", pos)
		}
		if err := fn(i, trimJSONSpace(b[pos:stop])); err != nil {
			return err
		}
		pos = stop
		for pos < end && isJSONSpace(b[pos]) {
			pos++
		}
		if pos < end {
			if b[pos] != ',' {
				return errorf(ErrSyntax, "want , at byte %d", pos)
			}
			pos++
		}
	}
}

// isJSONSpace reports whether c is JSON white space.
func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipJSONValue returns the end of the JSON value starting at b[pos],
// scanning no further than end: past its closing quote or bracket, or at
// the comma or bracket that ends a number or literal.
func skipJSONValue(b string, pos, end int) int {
	depth := 0
	inString := false
	for i := pos; i < end; i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
				if depth == 0 {
					return i + 1
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return end
}
