package main

import "errors"

var (
	errNoInputs = errors.New("give at least one PATH or --metrics PATH")
	errNoOut    = errors.New("--out DATASET is required")
)
