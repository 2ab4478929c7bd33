package deploy

import (
	"bufio"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/config"
)

// instruction is one Dockerfile instruction: its keyword (upper case)
// and the rest of the line.
type instruction struct{ cmd, args string }

// parseDockerfile reads the instructions of a Dockerfile (comments and
// blank lines dropped, continuation lines joined).
func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cont strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cont.WriteString(s + " ")
			continue
		}
		cont.WriteString(line)
		cmd, args, _ := strings.Cut(cont.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cont.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// runtimeStage is the instructions from the last FROM on.
func runtimeStage(ins []instruction) []instruction {
	last := 0
	for i, in := range ins {
		if in.cmd == "FROM" {
			last = i
		}
	}
	return ins[last:]
}

// lastArgs is the arguments of the last instruction cmd in ins, "" if
// there is none.
func lastArgs(ins []instruction, cmd string) string {
	var args string
	for _, in := range ins {
		if in.cmd == cmd {
			args = in.args
		}
	}
	return args
}

// jsonArgs returns the arguments of the runtime stage's instruction cmd
// (the last one), as a JSON array when it is one.
func jsonArgs(t *testing.T, ins []instruction, cmd string) []string {
	t.Helper()
	args := lastArgs(ins, cmd)
	if args == "" {
		t.Fatalf("no %s instruction", cmd)
	}
	var out []string
	if err := json.Unmarshal([]byte(args), &out); err != nil {
		t.Fatalf("%s %s: want the JSON (exec) form: %v", cmd, args, err)
	}
	return out
}

// TestDockerfiles: deploy/Dockerfile builds with Go and runs FROM scratch;
// deploy/Dockerfile.prebuilt pulls no image at all and ends in the same
// runtime lines; that runtime runs as the non-root user of its passwd,
// exposes the ports and declares the volume of the configuration it
// copies, and checks its health with strata probe on the readiness
// endpoint.
func TestDockerfiles(t *testing.T) {
	dir := filepath.Join(repo(t), "deploy")
	user := parseDockerfile(t, filepath.Join(dir, "Dockerfile"))
	pre := parseDockerfile(t, filepath.Join(dir, "Dockerfile.prebuilt"))

	if !strings.HasPrefix(user[slices.IndexFunc(user, func(in instruction) bool { return in.cmd == "FROM" })].args, "golang:") {
		t.Error("deploy/Dockerfile: the first stage does not build FROM golang")
	}
	for _, in := range pre {
		if in.cmd == "FROM" && in.args != "scratch" {
			t.Errorf("deploy/Dockerfile.prebuilt: FROM %s pulls an image", in.args)
		}
		if in.cmd == "RUN" {
			t.Errorf("deploy/Dockerfile.prebuilt: RUN %s needs a shell the scratch image lacks", in.args)
		}
	}
	rt := runtimeStage(user)
	if rt[0].args != "scratch" && !strings.HasPrefix(rt[0].args, "gcr.io/distroless/") {
		t.Errorf("deploy/Dockerfile runs FROM %s, want scratch or distroless", rt[0].args)
	}
	// The shared runtime: every instruction from the passwd COPY on.
	shared := func(ins []instruction) []instruction {
		i := slices.IndexFunc(ins, func(in instruction) bool { return in.cmd == "COPY" && strings.Contains(in.args, "deploy/image/passwd") })
		if i < 0 {
			t.Fatal("no COPY of deploy/image/passwd")
		}
		return ins[i:]
	}
	if a, b := shared(rt), shared(runtimeStage(pre)); !slices.Equal(a, b) {
		t.Errorf("the runtime lines differ:\nDockerfile:          %v\nDockerfile.prebuilt: %v", a, b)
	}

	uid, _, _ := strings.Cut(lastArgs(rt, "USER"), ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric non-root uid", uid)
	}
	passwd, err := os.ReadFile(filepath.Join(dir, "image", "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(passwd), ":x:"+uid+":") {
		t.Errorf("uid %s is not in deploy/image/passwd", uid)
	}

	entry := jsonArgs(t, rt, "ENTRYPOINT")
	ci := slices.Index(entry, "--config")
	if ci < 0 || ci+1 >= len(entry) || !slices.Contains(entry, "serve") {
		t.Fatalf("ENTRYPOINT %q: want strata serve --config <file>", entry)
	}
	var src string
	for _, in := range rt {
		if f := strings.Fields(in.args); in.cmd == "COPY" && len(f) == 2 && f[1] == entry[ci+1] {
			src = f[0]
		}
	}
	if src == "" {
		t.Fatalf("no COPY puts the config %s into the image", entry[ci+1])
	}
	cfg, err := config.Load(filepath.Join(repo(t), src), nil)
	if err != nil {
		t.Fatalf("the image's config: %v", err)
	}

	var exposed []string
	var volumes string
	for _, in := range rt {
		switch in.cmd {
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		case "VOLUME":
			volumes += in.args
		}
	}
	port := func(addr string) string {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("address %q: %v", addr, err)
		}
		return p
	}
	for _, l := range cfg.Listeners {
		_, addr, _ := strings.Cut(l, "://")
		if !slices.Contains(exposed, port(addr)) {
			t.Errorf("listener %s: its port is not in EXPOSE %v", l, exposed)
		}
	}
	metricsPort := port(cfg.MetricsListener)
	if !slices.Contains(exposed, metricsPort) {
		t.Errorf("metrics.listener %s: its port is not in EXPOSE %v", cfg.MetricsListener, exposed)
	}
	for _, d := range cfg.LogDirs {
		if !strings.Contains(volumes, `"`+d+`"`) {
			t.Errorf("log.dirs %s is not a VOLUME (%s)", d, volumes)
		}
	}

	health := lastArgs(rt, "HEALTHCHECK")
	_, cmd, ok := strings.Cut(health, "CMD ")
	var probe []string
	if !ok || json.Unmarshal([]byte(cmd), &probe) != nil || !slices.Contains(probe, "probe") || probe[0] != entry[0] {
		t.Fatalf("HEALTHCHECK %q: want CMD [\"%s\", \"probe\", ...]", health, entry[0])
	}
	ui := slices.Index(probe, "--url")
	if ui < 0 || ui+1 >= len(probe) {
		t.Fatalf("HEALTHCHECK %q: no --url", health)
	}
	u, err := url.Parse(probe[ui+1])
	if err != nil {
		t.Fatal(err)
	}
	if u.Port() != metricsPort || u.Path != broker.ReadyzPath {
		t.Errorf("HEALTHCHECK asks %s, want port %s (metrics.listener) and path %s", u, metricsPort, broker.ReadyzPath)
	}
}
