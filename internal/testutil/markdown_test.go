package testutil

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckMarkdownTables(t *testing.T) {
	good := "# T\n\n| A | B |\n|---|---:|\n| 1 | x\\|y |\n| 2 |  |\n\ntext\n\n| C |\n|---|\n| 3 |\n"
	n, err := CheckMarkdownTables(good)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	for name, bad := range map[string]string{
		"a cell's pipe unescaped": "| A | B |\n|---|---|\n| 1 | x|y |\n",
		"a row short":             "| A | B |\n|---|---|\n| 1 |\n",
		"no separator":            "| A | B |\n| 1 | 2 |\n",
		"separator short":         "| A | B |\n|---|\n| 1 | 2 |\n",
		"text after the table":    "| A |\n|---|\n| 1 |\ntext\n",
	} {
		_, err := CheckMarkdownTables(bad)
		require.Error(t, err, name)
	}
}
