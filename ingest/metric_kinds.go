package ingest

// KindMap maps metric names to kinds.
type KindMap struct{}
