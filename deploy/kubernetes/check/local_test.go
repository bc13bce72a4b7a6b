package check

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestManifestCommandsLocally runs what the manifests' pods run, on this
// machine: the cascade binary built from this repository, /work a
// temporary directory holding the bundled HotROD capture's dataset and
// model, each shard pod's args with its JOB_COMPLETION_INDEX, the merge
// pod's wait, then its args; and compares the merge's output with the
// unsharded command's. So the manifests' commands are the real ones and
// their paths meet.
func TestManifestCommandsLocally(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cascade and replays the example (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "cascade")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/cascade")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		c := exec.CommandContext(ctx, bin, args...)
		c.Stdout, c.Stderr = &stdout, &stderr
		if err := c.Run(); err != nil {
			t.Fatalf("cascade %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.String()
	}
	run("ingest", filepath.Join(root, "testdata", "hotrod-baseline", "traces-otlp.json.gz"), "--out", filepath.Join(work, "dataset"))
	run("graph", filepath.Join(work, "dataset"), "--out", filepath.Join(work, "model.json"))
	// A pod's view: /work is the volume.
	local := func(s string) string {
		if s == "/work" || strings.HasPrefix(s, "/work/") {
			return work + strings.TrimPrefix(s, "/work")
		}
		return strings.ReplaceAll(s, "/work/", work+"/")
	}

	for _, tc := range manifests {
		t.Run(tc.file, func(t *testing.T) {
			var p problems
			m, ok := decode(&p, tc.file, read(t, tc.file))
			if !ok || len(m.jobs) != 2 {
				t.Fatalf("%s does not decode: %v", tc.file, p)
			}
			shards, merge := m.jobs[0], m.jobs[1]
			n := int(*shards.Spec.Completions)
			args := shards.Spec.Template.Spec.Containers[0].Args
			var single []string
			for _, a := range args {
				if !strings.HasPrefix(a, "--shard=") && !strings.HasPrefix(a, "--out=") {
					single = append(single, local(a))
				}
			}
			for i := range n {
				var pod []string
				for _, a := range args {
					pod = append(pod, local(strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i))))
				}
				run(pod...)
			}
			ic := merge.Spec.Template.Spec.InitContainers[0]
			var wait []string
			for _, a := range append(append([]string{}, ic.Command...), ic.Args...) {
				wait = append(wait, local(a))
			}
			wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
			defer wcancel()
			if out, err := exec.CommandContext(wctx, wait[0], wait[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("the merge's wait, with every partial there: %v\n%s", err, out)
			}
			var margs []string
			var mout string
			for _, a := range merge.Spec.Template.Spec.Containers[0].Args {
				if v, ok := strings.CutPrefix(a, "--out="); ok {
					mout = local(v)
				}
				margs = append(margs, local(a))
			}
			got := run(margs...)
			if mout != "" {
				single = append(single, "--out="+filepath.Join(work, "single.json"))
			}
			want := run(single...)
			if got != want {
				t.Errorf("the merge's output is not the unsharded command's (%s)", strings.Join(single, " "))
			}
			if mout != "" {
				a, err1 := os.ReadFile(mout)
				b, err2 := os.ReadFile(filepath.Join(work, "single.json"))
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Errorf("the merge's %s is not the unsharded command's --out (%v, %v)", mout, err1, err2)
				}
			}
		})
	}
}
