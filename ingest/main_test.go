package ingest

import (
	"os"
	"testing"
)

// TestMain removes the datasets built once per test binary.
func TestMain(m *testing.M) {
	code := m.Run()
	removeReadFixtures()
	os.Exit(code)
}
