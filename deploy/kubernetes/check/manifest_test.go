package check

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// manifest is one file's objects, by kind.
type manifest struct {
	claims []corev1.PersistentVolumeClaim
	jobs   []batchv1.Job
}

// problems collects what a check finds.
type problems []string

func (p *problems) Errorf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// decode reads a multi-document YAML file strictly into its API types.
func decode(t *problems, path string, data []byte) (manifest, bool) {
	var m manifest
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Errorf("%s: document %d: %v", path, i+1, err)
			return m, false
		}
		where := fmt.Sprintf("%s: document %d (%s %s)", path, i+1, tm.APIVersion, tm.Kind)
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 PersistentVolumeClaim":
			var c corev1.PersistentVolumeClaim
			if !strict(t, where, doc, &c) {
				return m, false
			}
			m.claims = append(m.claims, c)
		case "batch/v1 Job":
			var j batchv1.Job
			if !strict(t, where, doc, &j) {
				return m, false
			}
			m.jobs = append(m.jobs, j)
		default:
			t.Errorf("%s: a kind this check does not know", where)
			return m, false
		}
	}
	return m, true
}

func strict(t *problems, where, doc string, v any) bool {
	if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
		t.Errorf("%s: %v", where, err)
		return false
	}
	return true
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// flag returns the value of --name=VALUE in args.
func flag(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// manifests are the files checked, with the command each shards.
var manifests = []struct {
	file, command string
	input         []string // the command's positional inputs after the subcommand
}{
	{"fit.yaml", "fit", []string{"/work/dataset"}},
	{"rank.yaml", "rank", []string{"/work/model.json"}},
}

// TestManifests checks every manifest of the sharded fit and rank.
func TestManifests(t *testing.T) {
	for _, tc := range manifests {
		t.Run(tc.file, func(t *testing.T) {
			vol, data := read(t, "volume.yaml"), read(t, tc.file)
			var p problems
			check(&p, vol, tc.file, data, tc.command, tc.input)
			for _, e := range p {
				t.Error(e)
			}
		})
	}
}

func read(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// check checks one manifest's data, with volume.yaml's (vol).
func check(t *problems, vol []byte, file string, data []byte, command string, input []string) {
	v, ok := decode(t, "volume.yaml", vol)
	if !ok {
		return
	}
	if len(v.claims) != 1 || len(v.jobs) != 0 {
		t.Errorf("volume.yaml: want one claim, got %d claims and %d jobs", len(v.claims), len(v.jobs))
		return
	}
	m, ok := decode(t, file, data)
	if !ok {
		return
	}
	if len(m.claims) != 0 || len(m.jobs) != 2 {
		t.Errorf("%s: want two jobs (shards, merge), got %d claims and %d jobs", file, len(m.claims), len(m.jobs))
		return
	}
	claim := v.claims[0]
	if !slices.Contains(claim.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("claim %s: pods on different nodes share it: want ReadWriteMany, got %v", claim.Name, claim.Spec.AccessModes)
	}
	shards, merge := m.jobs[0], m.jobs[1]

	// The shards: an Indexed Job, one pod per shard.
	s := shards.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("job %s: want completionMode Indexed", shards.Name)
		return
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism {
		t.Errorf("job %s: want completions = parallelism (one pod per shard)", shards.Name)
		return
	}
	n := int(*s.Completions)
	if !checkPod(t, shards.Name, &s.Template.Spec, claim.Name) {
		return
	}
	c := s.Template.Spec.Containers[0]
	if len(c.Args) < 1+len(input) || c.Args[0] != command || !slices.Equal(c.Args[1:1+len(input)], input) {
		t.Errorf("job %s: args %q, want %s %s …", shards.Name, c.Args, command, strings.Join(input, " "))
	}
	if got, want := flag(c.Args, "shard"), "$(JOB_COMPLETION_INDEX)/"+strconv.Itoa(n); got != want {
		t.Errorf("job %s: --shard=%s, want %s (completions %d)", shards.Name, got, want, n)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
	}) {
		t.Errorf("job %s: JOB_COMPLETION_INDEX is not declared from the completion-index annotation", shards.Name)
	}
	out := flag(c.Args, "out")
	dir := filepath.Dir(out)
	if !strings.Contains(out, "$(JOB_COMPLETION_INDEX)") || !strings.HasSuffix(out, ".json") {
		t.Errorf("job %s: --out=%s: want one .json file per index", shards.Name, out)
	}
	mounted(t, shards.Name, c, out)

	// The merge: one pod that reads the shards' directory once all N
	// partials are there.
	ms := merge.Spec
	if ms.CompletionMode != nil && *ms.CompletionMode == batchv1.IndexedCompletion || ms.Completions != nil && *ms.Completions != 1 {
		t.Errorf("job %s: the merge is one pod", merge.Name)
	}
	if ms.ActiveDeadlineSeconds == nil {
		t.Errorf("job %s: without activeDeadlineSeconds a merge whose shard failed for good waits forever", merge.Name)
	}
	if !checkPod(t, merge.Name, &ms.Template.Spec, claim.Name) {
		return
	}
	mc := ms.Template.Spec.Containers[0]
	if len(mc.Args) < 2 || mc.Args[0] != "merge" || mc.Args[1] != dir {
		t.Errorf("job %s: args %q, want merge %s", merge.Name, mc.Args, dir)
	}
	mounted(t, merge.Name, mc, dir)
	if len(ms.Template.Spec.InitContainers) != 1 {
		t.Errorf("job %s: want one init container waiting for the partials", merge.Name)
		return
	}
	ic := ms.Template.Spec.InitContainers[0]
	wait := strings.Join(append(slices.Clone(ic.Command), ic.Args...), " ")
	if !strings.Contains(wait, dir+"/*.json") || !strings.Contains(wait, "-ge "+strconv.Itoa(n)+" ]") {
		t.Errorf("job %s: init container %q does not wait for %d files in %s", merge.Name, wait, n, dir)
	}
	mounted(t, merge.Name, ic, dir)
	if ic.Image != c.Image || mc.Image != c.Image {
		t.Errorf("one image for shards and merge (partials are read by the version that wrote them): %s, %s, %s", c.Image, ic.Image, mc.Image)
	}
}

// TestCheckCatches: each manifest mistake the check is for, made in
// fit.yaml, is found.
func TestCheckCatches(t *testing.T) {
	vol, data := read(t, "volume.yaml"), read(t, "fit.yaml")
	tests := []struct{ name, old, new, want string }{
		{"misspelt field", "completionMode: Indexed", "completionMod: Indexed", `unknown field "completionMod"`},
		{"wrong type", "parallelism: 4", "parallelism: four", "cannot unmarshal"},
		{"not indexed", "completionMode: Indexed", "completionMode: NonIndexed", "want completionMode Indexed"},
		{"fewer pods than shards", "parallelism: 4", "parallelism: 2", "want completions = parallelism"},
		{"shard count", "--shard=$(JOB_COMPLETION_INDEX)/4", "--shard=$(JOB_COMPLETION_INDEX)/3", "want $(JOB_COMPLETION_INDEX)/4"},
		{"merge waits for fewer", `-ge 4 ]`, `-ge 3 ]`, "does not wait for 4 files"},
		{"merge reads elsewhere", "- /work/parts/fit\n", "- /work/parts/other\n", "want merge /work/parts/fit"},
		{"partial off the volume", "--out=/work/parts/fit/part-", "--out=/tmp/part-", "is on no mounted volume"},
		{"claim not shared", "accessModes: [ReadWriteMany]", "accessModes: [ReadWriteOnce]", "want ReadWriteMany"},
		{"no deadline", "activeDeadlineSeconds: 86400", "", "waits forever"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, new := tc.old, tc.new
			badVol, bad := vol, data
			switch {
			case bytes.Contains(data, []byte(old)):
				bad = bytes.Replace(data, []byte(old), []byte(new), 1)
			case bytes.Contains(vol, []byte(old)):
				badVol = bytes.Replace(vol, []byte(old), []byte(new), 1)
			default:
				t.Fatalf("neither fit.yaml nor volume.yaml holds %q", old)
			}
			var p problems
			check(&p, badVol, "fit.yaml", bad, "fit", []string{"/work/dataset"})
			if !strings.Contains(strings.Join(p, "\n"), tc.want) {
				t.Errorf("want a problem saying %q, got %q", tc.want, p)
			}
		})
	}
}

// checkPod checks what every pod of the run needs: no restart in place
// (the Job retries), one container, volumes that exist and name the claim.
func checkPod(t *problems, job string, p *corev1.PodSpec, claim string) bool {
	if p.RestartPolicy != corev1.RestartPolicyNever && p.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("job %s: restartPolicy %q, want Never or OnFailure", job, p.RestartPolicy)
	}
	if len(p.Containers) != 1 {
		t.Errorf("job %s: want one container, got %d", job, len(p.Containers))
		return false
	}
	vols := map[string]bool{}
	for _, v := range p.Volumes {
		vols[v.Name] = true
		if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim {
			t.Errorf("job %s: volume %s: want the claim %s", job, v.Name, claim)
		}
	}
	for _, c := range slices.Concat(p.InitContainers, p.Containers) {
		if c.Image == "" {
			t.Errorf("job %s: container %s has no image", job, c.Name)
		}
		for _, vm := range c.VolumeMounts {
			if !vols[vm.Name] {
				t.Errorf("job %s: container %s mounts %s, which the pod does not declare", job, c.Name, vm.Name)
			}
		}
	}
	return true
}

// mounted checks that path lies on a volume the container mounts.
func mounted(t *problems, job string, c corev1.Container, path string) {
	for _, vm := range c.VolumeMounts {
		if path == vm.MountPath || strings.HasPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/") {
			return
		}
	}
	t.Errorf("job %s: container %s: %s is on no mounted volume (the pods share nothing else)", job, c.Name, path)
}
