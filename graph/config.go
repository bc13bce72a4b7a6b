package graph

import (
	"errors"
	"fmt"
	"time"
)

// Level is the granularity of the graph's nodes.
type Level string

// Levels.
const (
	// LevelService makes one node per service (and per uninstrumented
	// peer).
	LevelService Level = "service"
	// LevelOperation makes one node per service and operation of the span
	// that starts a request in that service ("route:/route").
	LevelOperation Level = "operation"
)

// ParseLevel returns the level named s; the empty string means
// LevelService.
func ParseLevel(s string) (Level, error) {
	switch Level(s) {
	case "", LevelService:
		return LevelService, nil
	case LevelOperation:
		return LevelOperation, nil
	}
	return "", fmt.Errorf("level %q: want service or operation", s)
}

// Config is what a user sets for one graph build.
type Config struct {
	// Level selects service or service+operation nodes. Default
	// LevelService; empty means LevelService.
	Level Level
	// Window is the width of the windows of the per-node time series
	// (request rate, error rate, in-flight) and of the busiest window that
	// the Little's-law check uses. Default 1 s; zero means the default.
	Window time.Duration
	// Resolution is the width of the time bins in which in-flight requests
	// are accumulated per node. Finer bins see shorter peaks and cost
	// memory: about 40 bytes per bin per node. Default 10 ms; zero means
	// the default.
	Resolution time.Duration
	// MaxBins bounds the bins one node keeps; when a node's activity spans
	// more, its bins are merged in pairs (the resolution doubles), so memory
	// stays bounded whatever the dataset's time range. Default 32768; zero
	// means the default.
	MaxBins int
	// Reservoir is the number of values kept per quantile estimate
	// (latencies, exclusive times, backoff gaps): quantiles are exact up to
	// that many values and estimated from a uniform sample beyond. Default
	// 4096; zero means the default.
	Reservoir int
	// Seed seeds the PCG generator that drives reservoir sampling, so the
	// same input gives the same model. Default 1; zero means the default.
	Seed uint64
	// Dataset is recorded as the model's source; free text, usually the
	// dataset path or the raw inputs as given. Default empty.
	Dataset string
	// Name is recorded as the model's name. Default empty.
	Name string
	// SeriesStart is the start of the time range aggregated series were
	// read over (the --start of cascade graph --from): a connector series
	// whose first point is later was created in the range, so its first
	// value counts as increase. Zero means the earliest point read.
	SeriesStart time.Time
}

// Defaults of Config.
const (
	DefaultWindow     = time.Second
	DefaultResolution = 10 * time.Millisecond
	DefaultMaxBins    = 1 << 15
	DefaultReservoir  = 4096
	DefaultSeed       = 1
)

// DefaultConfig returns the defaults described on Config's fields.
func DefaultConfig() Config {
	return Config{
		Level:      LevelService,
		Window:     DefaultWindow,
		Resolution: DefaultResolution,
		MaxBins:    DefaultMaxBins,
		Reservoir:  DefaultReservoir,
		Seed:       DefaultSeed,
	}
}

// Validate reports every problem with the config, each naming its field.
func (c *Config) Validate() error {
	var errs []error
	if _, err := ParseLevel(string(c.Level)); err != nil {
		errs = append(errs, fmt.Errorf("level: %w", err))
	}
	if c.Window < 0 {
		errs = append(errs, fmt.Errorf("window: %v is negative", c.Window))
	}
	if c.Resolution < 0 {
		errs = append(errs, fmt.Errorf("resolution: %v is negative", c.Resolution))
	}
	if c.Window > 0 && c.Resolution > 0 && c.Window < c.Resolution {
		errs = append(errs, fmt.Errorf("window: %v is shorter than the resolution %v", c.Window, c.Resolution))
	}
	if c.MaxBins < 0 {
		errs = append(errs, fmt.Errorf("max-bins: %d is negative", c.MaxBins))
	} else if c.MaxBins > 0 && c.MaxBins < 2*chunkLen {
		errs = append(errs, fmt.Errorf("max-bins: %d, want at least %d", c.MaxBins, 2*chunkLen))
	}
	if c.Reservoir < 0 {
		errs = append(errs, fmt.Errorf("reservoir: %d is negative", c.Reservoir))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Level == "" {
		c.Level = d.Level
	}
	if c.Window == 0 {
		c.Window = d.Window
	}
	if c.Resolution == 0 {
		c.Resolution = d.Resolution
	}
	if c.MaxBins == 0 {
		c.MaxBins = d.MaxBins
	}
	if c.Reservoir == 0 {
		c.Reservoir = d.Reservoir
	}
	if c.Seed == 0 {
		c.Seed = d.Seed
	}
	return c
}
