package mdtable

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriter(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"labelled lines", "spans\t12\nservices\t2\ta b\t\n", "- **spans**: 12\n- **services**: 2 a b\n"},
		{"table", "NODE\tCALLS\t\napi\t3\t\nd|b\t\n", "| NODE | CALLS |\n|---|---|\n| api | 3 |\n| d\\|b |  |\n"},
		{"blocks", "model\tm.json\n\nEDGE\tAMP\na->b\t2\textra\n", "- **model**: m.json\n\n| EDGE | AMP |\n|---|---|\n| a->b | 2 |\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			w := NewWriter(&b)
			fmt.Fprint(w, tc.in)
			require.NoError(t, w.Flush())
			require.Equal(t, tc.want, b.String())
		})
	}
}
