package main

import (
	"bytes"
	"fmt"
	"os"

	"cascade"
	"cascade/ingest"
)

// readModel reads the model document at path, and when path holds
// something else says what it holds and how to get a model from it:
// traces or a dataset are what `cascade graph` builds a model from.
func readModel(path string) (*cascade.Model, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		if isDataset(path) {
			return nil, inputError{fmt.Errorf("%s is a dataset, not a model: build the model with `cascade graph %s --out model.json` and give model.json", path, path)}
		}
		return nil, inputError{fmt.Errorf("%s is a directory, not a model file (model.json, as `cascade graph --out` writes it)", path)}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, inputError{fmt.Errorf("%s: empty file, want a model document (model.json, as `cascade graph --out` writes it)", path)}
	}
	m, err := cascade.DecodeModel(b)
	if err != nil {
		if f, ok := ingest.SniffTraces(path); ok {
			return nil, inputError{fmt.Errorf("%s holds traces (%s), not a model: build the model with `cascade graph %s --out model.json` and give model.json", path, f, path)}
		}
		return nil, inputError{fmt.Errorf("%s: not a model document (model.json, as `cascade graph --out` writes it): %w", path, err)}
	}
	return m, nil
}
