package collect

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
)

// serveOne runs one POST /v1/traces protobuf request through rc's handler.
func serveOne(rc *receiver, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, pathTraces, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentTypeProto)
	rec := httptest.NewRecorder()
	rc.ServeHTTP(rec, req)
	return rec
}

func runtimeGosched() { runtime.Gosched() }

// openReadOnly creates path and opens it read-only, so that writes fail.
func openReadOnly(path string) (*os.File, error) {
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return nil, err
	}
	return os.Open(path)
}

// memoryLeft is what is left of the receiver's memory budget.
func (rc *receiver) memoryLeft() int64 {
	rc.memory.mu.Lock()
	defer rc.memory.mu.Unlock()
	return rc.memory.mu.left
}
