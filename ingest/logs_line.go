package ingest

import (
	"encoding/json"
	"strings"
)

// This file reads what a text log line carries besides its message: the
// wrapper of Docker's json-file driver, a level word among the first
// tokens (log4j, logback and most layouts put it after the time and the
// thread), and trace and span ids written into the line as
// "TraceID: <hex>" or "trace_id=<hex>", as Nezha's TrainTicket services
// and the OpenTelemetry log bridges' MDC patterns do.

// logLine is what parseLogLine found in a line.
type logLine struct {
	severity        string
	traceID, spanID string
	body            string
}

// severityWords maps the level words of common layouts to the stored
// severities.
var severityWords = map[string]string{
	"TRACE": "TRACE", "FINEST": "TRACE", "FINER": "TRACE",
	"DEBUG": "DEBUG", "FINE": "DEBUG", "DBG": "DEBUG",
	"INFO": "INFO", "INF": "INFO", "NOTICE": "INFO",
	"WARN": "WARN", "WARNING": "WARN", "WRN": "WARN",
	"ERROR": "ERROR", "ERR": "ERROR", "SEVERE": "ERROR",
	"FATAL": "FATAL", "CRITICAL": "FATAL", "CRIT": "FATAL", "PANIC": "FATAL", "EMERG": "FATAL", "ALERT": "FATAL",
}

// normalizeSeverity maps a severity field's text (any case) to a stored
// severity, or "".
func normalizeSeverity(s string) string {
	return severityWords[strings.ToUpper(strings.TrimSpace(s))]
}

// maxLevelToken is how many leading tokens may come before the level word.
const maxLevelToken = 4

// logToken is one white-space separated token of a line and its bytes.
type logToken struct {
	text       string
	start, end int
}

// tokenize splits s at white space, keeping each token's position; it
// stops after max tokens (max < 0: all).
func tokenize(dst []logToken, s string, max int) []logToken {
	start := -1
	for i := 0; i < len(s); i++ {
		if isLogSpace(s[i]) {
			if start >= 0 {
				dst = append(dst, logToken{s[start:i], start, i})
				start = -1
				if len(dst) == max {
					return dst
				}
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		dst = append(dst, logToken{s[start:], start, len(s)})
	}
	return dst
}

func isLogSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// unwrapDocker returns the message of a Docker json-file log line
// ({"log":"...","stream":"stdout","time":"..."}), or s as it is.
func unwrapDocker(s string) string {
	if !strings.HasPrefix(s, `{"log":`) {
		return s
	}
	var w struct {
		Log *string `json:"log"`
	}
	if json.Unmarshal([]byte(s), &w) != nil || w.Log == nil {
		return s
	}
	return *w.Log
}

// parseLogLine reads a text line: it unwraps a Docker json-file line,
// finds a level word among the first tokens (the tokens before it must
// look like a time or a [thread]: each holds a digit or is bracketed),
// takes the trace and span ids written into the line, and returns as body
// the rest of the line, without those.
func parseLogLine(s string, scratch []logToken) (logLine, []logToken) {
	s = strings.TrimRight(unwrapDocker(s), " \t\r\n")
	var l logLine
	toks := tokenize(scratch[:0], s, maxLevelToken+1)
	for k, t := range toks {
		w := strings.Trim(t.text, "[]:")
		if sev := severityWords[w]; sev != "" && (w == strings.ToUpper(w)) {
			l.severity = sev
			s = strings.TrimLeft(s[t.end:], " \t")
			break
		}
		if v, ok := cutLevelKey(t.text); ok {
			l.severity = normalizeSeverity(v)
			break
		}
		if k == maxLevelToken || !(hasDigitByte(t.text) || strings.HasPrefix(t.text, "[") || t.text == "-") {
			break
		}
	}
	toks = tokenize(toks[:0], s, -1)
	var cut [][2]int // byte ranges to drop from the body
	for k := 0; k < len(toks); k++ {
		t := toks[k].text
		key, val, hasVal := strings.Cut(t, "=")
		if !hasVal {
			key = strings.TrimSuffix(t, ":")
		}
		var dst *string
		switch {
		case len(key) < 6 || len(key) > 8:
			continue
		case strings.EqualFold(key, "traceid") || strings.EqualFold(key, "trace_id") || strings.EqualFold(key, "trace-id"):
			dst = &l.traceID
		case strings.EqualFold(key, "spanid") || strings.EqualFold(key, "span_id") || strings.EqualFold(key, "span-id"):
			dst = &l.spanID
		default:
			continue
		}
		end := toks[k].end
		if !hasVal {
			if !strings.HasSuffix(t, ":") || k+1 == len(toks) {
				continue
			}
			val, end = toks[k+1].text, toks[k+1].end
		}
		val = strings.Trim(val, `",;`)
		if !isHexID(val) || *dst != "" {
			continue
		}
		*dst = strings.ToLower(val)
		cut = append(cut, [2]int{toks[k].start, end})
		if !hasVal {
			k++
		}
	}
	if len(cut) == 0 {
		l.body = s
		return l, toks
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, c := range cut {
		b.WriteString(s[prev:c[0]])
		prev = c[1]
		for prev < len(s) && (s[prev] == ' ' || s[prev] == '\t') {
			prev++
		}
	}
	b.WriteString(s[prev:])
	l.body = strings.TrimRight(b.String(), " \t")
	return l, toks
}

// cutLevelKey reads a logfmt level token: level=error, lvl=warn,
// severity=info.
func cutLevelKey(t string) (string, bool) {
	k, v, ok := strings.Cut(t, "=")
	if !ok {
		return "", false
	}
	switch strings.ToLower(k) {
	case "level", "lvl", "severity":
		return strings.Trim(v, `"`), true
	}
	return "", false
}

// isHexID reports whether s is 8 to 64 hexadecimal digits (dashes
// allowed, as in a UUID).
func isHexID(s string) bool {
	if len(s) < 8 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

func hasDigitByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}
