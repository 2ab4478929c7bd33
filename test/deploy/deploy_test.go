package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/strata-broker/strata/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// scrapeLabels are added by Prometheus to every series it scrapes.
var scrapeLabels = []string{"job", "instance"}

// syntheticMetrics are made by Prometheus, not exported by brokers.
var syntheticMetrics = map[string]bool{"up": true}

// use is one PromQL expression of a deploy file, with the templates
// ({{label}}) printed over its result.
type use struct {
	where     string
	expr      string
	templates []string
}

// dashboardUses reads every query of the Grafana dashboard: panel
// targets (with their legends) and template variable queries.
func dashboardUses(t *testing.T, path string) []use {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []use
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, use{where: "panel " + p.Title, expr: tg.Expr, templates: []string{tg.LegendFormat}})
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition == "" {
			continue
		}
		// label_values(selector, label)
		in, ok := strings.CutPrefix(v.Definition, "label_values(")
		i := strings.LastIndexByte(in, ',')
		if !ok || i < 0 || !strings.HasSuffix(in, ")") {
			t.Fatalf("variable %s: want label_values(selector, label), got %q", v.Name, v.Definition)
		}
		label := strings.TrimSpace(in[i+1 : len(in)-1])
		out = append(out, use{where: "variable " + v.Name, expr: in[:i], templates: []string{"{{" + label + "}}"}})
	}
	return out
}

// alertUses reads every rule of the Prometheus rule file, with its labels
// and annotations as templates.
func alertUses(t *testing.T, path string) []use {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Record      string            `yaml:"record"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []use
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" {
				t.Errorf("%s: group %s has a rule without alert or expr: %+v", path, g.Name, r)
			}
			if _, err := time.ParseDuration(r.For); r.For != "" && err != nil {
				t.Errorf("alert %s: for %q: %v", r.Alert, r.For, err)
			}
			u := use{where: "alert " + r.Alert, expr: r.Expr}
			for _, v := range r.Annotations {
				u.templates = append(u.templates, v)
			}
			for _, v := range r.Labels {
				u.templates = append(u.templates, v)
			}
			out = append(out, u)
		}
	}
	return out
}

// exported scrapes a broker's /metrics: every sample name with the label
// names its series carry.
func exported(t *testing.T, addr string) map[string]map[string]bool {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		labels := ""
		if i := strings.IndexByte(line, '{'); i >= 0 && i < len(name) {
			name, labels = line[:i], line[i+1:]
		}
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for labels != "" && labels[0] != '}' {
			k, v, ok := strings.Cut(labels, "=")
			if !ok || len(v) == 0 || v[0] != '"' {
				t.Fatalf("metrics line %q: bad labels", line)
			}
			out[name][strings.TrimPrefix(k, ",")] = true
			// Skip the quoted value.
			j := 1
			for j < len(v) && v[j] != '"' {
				if v[j] == '\\' {
					j++
				}
				j++
			}
			labels = strings.TrimPrefix(v[j+1:], ",")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read metrics: %v", err)
	}
	return out
}

// missing checks each use against the exported series and returns what
// is not there, one line each.
func missing(uses []use, exp map[string]map[string]bool) []string {
	var out []string
	for _, u := range uses {
		r, err := parseRefs(u.expr)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", u.where, err))
			continue
		}
		if len(r.metrics) == 0 {
			out = append(out, fmt.Sprintf("%s: no metric in %q", u.where, u.expr))
		}
		allowed := map[string]bool{}
		for _, l := range scrapeLabels {
			allowed[l] = true
		}
		for _, m := range r.metrics {
			if syntheticMetrics[m] {
				continue
			}
			labels, ok := exp[m]
			if !ok {
				out = append(out, fmt.Sprintf("%s: metric %s is not exported", u.where, m))
			}
			for l := range labels {
				allowed[l] = true
			}
		}
		for _, l := range r.labels {
			if !allowed[l] {
				out = append(out, fmt.Sprintf("%s: label %s is not on %v", u.where, l, r.metrics))
			}
		}
		for _, tmpl := range u.templates {
			for _, l := range templateLabels(tmpl) {
				if !allowed[l] {
					out = append(out, fmt.Sprintf("%s: template label %s is not on %v", u.where, l, r.metrics))
				}
			}
		}
	}
	return out
}

// TestDeployFilesMatchMetrics starts a broker with tiered storage (the
// local-directory backend) and a metrics listener, gives it a tiered
// topic, a consumer group with committed offsets and a fetch that waits
// out its max wait, so every series the dashboards use exists; then it
// checks every metric and label of deploy/grafana/strata.json and
// deploy/prometheus/strata-alerts.yml against /metrics.
func TestDeployFilesMatchMetrics(t *testing.T) {
	root := filepath.Join(repo(t), "deploy")
	uses := append(dashboardUses(t, filepath.Join(root, "grafana", "strata.json")),
		alertUses(t, filepath.Join(root, "prometheus", "strata-alerts.yml"))...)
	if len(uses) < 20 {
		t.Fatalf("only %d queries found in the deploy files", len(uses))
	}

	addr := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	b := harness.Start(t, map[string]string{
		"metrics.listener":                     addr,
		"remote.log.storage.system.enable":     "true",
		"remote.log.manager.task.interval.ms":  "100",
		"transaction.state.log.num.partitions": "1",
		"offsets.topic.num.partitions":         "1",
	})
	const topic = "dash"
	harness.CreateTopic(t, b.Admin(), topic, 2, map[string]string{"remote.storage.enable": "true", "segment.bytes": "16384"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr := b.Client(kgo.DefaultProduceTopic(topic))
	for i := range 100 {
		if err := pr.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A group member consumes everything and commits; the next poll's
	// fetch waits at the end of the log until max.wait.ms expires it.
	cons := b.Client(kgo.ConsumeTopics(topic), kgo.ConsumerGroup("dash-group"), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 100; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	var exp map[string]map[string]bool
	var lack []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		exp = exported(t, addr)
		if lack = missing(uses, exp); len(lack) == 0 || time.Now().After(deadline) {
			break
		}
		// Expiring fetches and tier copies come with time; poll again.
		pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		cons.PollFetches(pctx)
		pcancel()
	}
	for _, l := range lack {
		t.Error(l)
	}
	if len(lack) == 0 {
		names := 0
		for _, u := range uses {
			r, _ := parseRefs(u.expr)
			names += len(r.metrics)
		}
		t.Logf("%d queries, %d metric references, all exported", len(uses), names)
	}
}

// TestParseRefs covers the PromQL forms the deploy files use.
func TestParseRefs(t *testing.T) {
	tests := []struct {
		expr            string
		metrics, labels []string
	}{
		{`sum by (job) (strata_under_replicated_partitions) > 0`, []string{"strata_under_replicated_partitions"}, []string{"job"}},
		{`histogram_quantile(0.99, sum by (le, api) (rate(strata_request_duration_seconds_bucket{job=~"$job", api!="Fetch"}[$__rate_interval])))`,
			[]string{"strata_request_duration_seconds_bucket"}, []string{"le", "api", "job", "api"}},
		{`strata_log_dir_used_bytes / on (instance, dir) strata_log_dir_total_bytes > 0.85`, []string{"strata_log_dir_used_bytes", "strata_log_dir_total_bytes"}, []string{"instance", "dir"}},
		{`sum(a) without (x) and ignoring (y) b offset 5m unless count(up{job='x'} == 1)`, []string{"a", "b", "up"}, []string{"x", "y", "job"}},
		{`max(c) by (topic) * on (topic) group_left (group) d{a="}{,=\""}`, []string{"c", "d"}, []string{"topic", "topic", "group", "a"}},
	}
	for _, tc := range tests {
		r, err := parseRefs(tc.expr)
		if err != nil || !slices.Equal(r.metrics, tc.metrics) || !slices.Equal(r.labels, tc.labels) {
			t.Errorf("%s: metrics %v labels %v err %v; want %v %v", tc.expr, r.metrics, r.labels, err, tc.metrics, tc.labels)
		}
	}
	for _, bad := range []string{`a{b="c`, `a{b}`, `rate(a[5m)`} {
		if _, err := parseRefs(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if got := templateLabels(`{{ $labels.topic }}-{{ $labels.partition }} {{ $value | humanize }} {{api}}`); !slices.Equal(got, []string{"topic", "partition", "api"}) {
		t.Errorf("templateLabels: %v", got)
	}
}
