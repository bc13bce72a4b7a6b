package numfmt

import "testing"

func TestFormats(t *testing.T) {
	tests := []struct {
		x         float64
		brief, ms string
		round3    float64
	}{
		{x: 0, brief: "0", ms: "0 ms", round3: 0},
		{x: 0.012345, brief: "0.0123", ms: "0.0123 ms", round3: 0.0123},
		{x: 1.5, brief: "1.5", ms: "1.5 ms", round3: 1.5},
		{x: 12.34, brief: "12.3", ms: "12.3 ms", round3: 12.3},
		{x: 850, brief: "850", ms: "850 ms", round3: 850},
		{x: 1234, brief: "1234", ms: "1.23 s", round3: 1230},
		{x: -2.50, brief: "-2.5", ms: "-2.5 ms", round3: -2.5},
	}
	for _, tc := range tests {
		if got := Brief(tc.x); got != tc.brief {
			t.Errorf("Brief(%v) = %q, want %q", tc.x, got, tc.brief)
		}
		if got := MS(tc.x); got != tc.ms {
			t.Errorf("MS(%v) = %q, want %q", tc.x, got, tc.ms)
		}
		if got := Round3(tc.x); got != tc.round3 {
			t.Errorf("Round3(%v) = %v, want %v", tc.x, got, tc.round3)
		}
	}
}

// TestNoNegZero: a number that rounds to zero prints without a sign
// (issue 39: "-0.00/s" in the ranking); any other keeps its own.
func TestNoNegZero(t *testing.T) {
	tests := []struct{ in, want string }{
		{"-0.00/s", "0.00/s"},
		{"+-0.00", "0.00"},
		{"−0.0 pp", "0.0 pp"},
		{"-0", "0"},
		{"-0,000.00 ms", "0,000.00 ms"},
		{"-0.01/s", "-0.01/s"},
		{"+0.00/s", "+0.00/s"},
		{"-1.00", "-1.00"},
		{"-", "-"},
		{"-x", "-x"},
		{"0.00", "0.00"},
	}
	for _, tc := range tests {
		if got := NoNegZero(tc.in); got != tc.want {
			t.Errorf("NoNegZero(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
