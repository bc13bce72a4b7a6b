package rank

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
