package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-broker/strata/metadata"
)

// topicUsage is the help of `strata topic`.
const topicUsage = `usage: strata topic list         [--internal] [flags]
       strata topic describe     <topic>... [--all-configs] [flags]
       strata topic create       <topic>... [-p N] [-r R] [-c key=value]... [flags]
       strata topic delete       <topic>... [flags]
       strata topic alter-config <topic>... [--set key=value]... [--delete key]... [flags]
       strata topic produce      <topic> [-k KEY | --key-delimiter SEP] [-H key=value]... [-p N] [flags] < records
       strata topic consume      <topic>... [-o start|end|N|@ms] [-n N] [-p N,...] [-g GROUP] [-e] [-f LAYOUT] [flags]

The topic commands speak the Kafka protocol (Metadata, CreateTopics,
DeleteTopics, DescribeConfigs, IncrementalAlterConfigs, ListOffsets,
Produce, Fetch), so they work against any broker of the cluster. Every
command takes --brokers, --command-config and --format table|json.
` + commandConfigHelp + `

list          prints each topic: its id, partitions and replication factor.
describe      prints each topic's partitions (leader, epoch, replicas, ISR,
              offline replicas, log start and high watermark) and the
              configs not at their defaults (--all-configs: every one),
              with their source.
create        creates topics; -p and -r default to the broker's
              num.partitions and default.replication.factor.
delete        deletes topics.
alter-config  sets (--set) and removes (--delete) topic config overrides.
produce       produces one record per line of standard input, the line
              the value; -k gives every record that key, --key-delimiter
              splits each line into key and value at its first SEP.
consume       prints records from -o (start, end, an offset N, or @ms: the
              first record at or after that Unix millisecond time) on, -n
              of them, or until each partition's end as of the start with
              -e. With -g it consumes as a member of the group, committing
              its offsets (with -e, it should be the group's only member);
              without, it reads the partitions the topics have when it
              starts. -f formats each record as rpk and kcat do:
              %t topic, %p partition, %o offset, %k key, %v value,
              %d timestamp (ms), %h headers (%h{%k=%v }), %H header count,
              \n \t; the default is "%v\n". --format json prints one JSON
              object per record instead.`

// runTopic is `strata topic ...`.
func runTopic(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, "topic", topicUsage, []subcommand{
		{"list", runTopicList}, {"describe", runTopicDescribe}, {"create", runTopicCreate},
		{"delete", runTopicDelete}, {"alter-config", runTopicAlterConfig},
		{"produce", runTopicProduce}, {"consume", runTopicConsume},
	}, args, stdout, stderr)
}

// TopicSummary is one topic as `strata topic list` prints it.
type TopicSummary struct {
	Name              string `json:"name"`
	ID                string `json:"id"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal"`
}

// runTopicList is `strata topic list`.
func runTopicList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("topic list", topicUsage, stderr)
	internal := f.fs.Bool("internal", false, "include internal topics (__consumer_offsets, __transaction_state)")
	_, adm, ctx, done, err := f.parseAndConnect(ctx, args, 0, 0, "no arguments")
	if err != nil {
		return err
	}
	defer done()
	list := adm.ListTopics
	if *internal {
		list = adm.ListTopicsWithInternal
	}
	topics, err := list(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	out := []TopicSummary{}
	for _, t := range topics.Sorted() {
		if t.Err != nil {
			return fmt.Errorf("topic %s: %w", t.Topic, t.Err)
		}
		rf := 0
		for _, p := range t.Partitions {
			rf = max(rf, len(p.Replicas))
		}
		out = append(out, TopicSummary{Name: t.Topic, ID: topicID(t.ID), Partitions: len(t.Partitions), ReplicationFactor: rf, Internal: t.IsInternal})
	}
	return f.output(stdout, out, func(w io.Writer) {
		fmt.Fprintln(w, "NAME\tPARTITIONS\tREPLICAS\tID")
		for _, t := range out {
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", t.Name, t.Partitions, t.ReplicationFactor, t.ID)
		}
	})
}

// TopicDescription is one topic as `strata topic describe` prints it.
type TopicDescription struct {
	TopicSummary
	Configs         []TopicConfig          `json:"configs"`
	PartitionStates []PartitionDescription `json:"partition_states"`
}

// TopicConfig is one config of a topic with where its value comes from.
type TopicConfig struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// PartitionDescription is one partition of a described topic.
type PartitionDescription struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas"`
	LogStartOffset  int64   `json:"log_start_offset"`
	HighWatermark   int64   `json:"high_watermark"`
	Error           string  `json:"error,omitempty"`
}

// runTopicDescribe is `strata topic describe <topic>...`.
func runTopicDescribe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("topic describe", topicUsage, stderr)
	all := f.fs.Bool("all-configs", false, "print every config, not only those set away from the defaults")
	names, adm, ctx, done, err := f.parseAndConnect(ctx, args, 1, -1, "one or more topics")
	if err != nil {
		return err
	}
	defer done()
	out, err := describeTopics(ctx, adm, names, *all)
	if err != nil {
		return err
	}
	var blocks []func(io.Writer)
	for _, d := range out {
		blocks = append(blocks, func(w io.Writer) {
			fmt.Fprintf(w, "NAME\t%s\nID\t%s\nPARTITIONS\t%d\nREPLICAS\t%d\nINTERNAL\t%v\n\nCONFIG\tVALUE\tSOURCE\n",
				d.Name, d.ID, d.Partitions, d.ReplicationFactor, d.Internal)
			for _, c := range d.Configs {
				fmt.Fprintf(w, "%s\t%s\t%s\n", c.Name, c.Value, c.Source)
			}
		}, func(w io.Writer) {
			fmt.Fprintln(w, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tOFFLINE\tLOG-START\tHIGH-WATERMARK\tERROR")
			for _, p := range d.PartitionStates {
				fmt.Fprintf(w, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Partition, p.Leader, p.LeaderEpoch, ints(p.Replicas), ints(p.ISR),
					ints(p.OfflineReplicas), offsetOrDash(p.LogStartOffset), offsetOrDash(p.HighWatermark), oneLine(p.Error, 60))
			}
		})
	}
	return f.outputBlocks(stdout, out, blocks)
}

// describeTopics gathers the metadata, configs and offsets of topics.
func describeTopics(ctx context.Context, adm *kadm.Client, names []string, allConfigs bool) ([]TopicDescription, error) {
	md, err := adm.ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	for _, n := range names {
		if d, ok := md[n]; !ok || d.Err != nil {
			return nil, fmt.Errorf("topic %s: %w", n, errors.Join(d.Err, errIf(!ok, "not found")))
		}
	}
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", err)
	}
	var out []TopicDescription
	for _, n := range names {
		t := md[n]
		d := TopicDescription{TopicSummary: TopicSummary{Name: n, ID: topicID(t.ID), Partitions: len(t.Partitions), Internal: t.IsInternal}}
		for _, p := range t.Partitions.Sorted() {
			d.ReplicationFactor = max(d.ReplicationFactor, len(p.Replicas))
			pd := PartitionDescription{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR,
				OfflineReplicas: p.OfflineReplicas, LogStartOffset: -1, HighWatermark: -1, Error: errString(p.Err)}
			if o, ok := starts.Lookup(n, p.Partition); ok && o.Err == nil {
				pd.LogStartOffset = o.Offset
			}
			if o, ok := ends.Lookup(n, p.Partition); ok && o.Err == nil {
				pd.HighWatermark = o.Offset
			}
			d.PartitionStates = append(d.PartitionStates, pd)
		}
		for _, rc := range configs {
			if rc.Name != n {
				continue
			}
			if rc.Err != nil {
				return nil, fmt.Errorf("configs of %s: %w", n, rc.Err)
			}
			for _, c := range rc.Configs {
				src := configSource(c)
				if !allConfigs && (src == "default" || src == "broker-default") {
					continue
				}
				d.Configs = append(d.Configs, TopicConfig{Name: c.Key, Value: c.MaybeValue(), Source: src, Sensitive: c.Sensitive})
			}
		}
		slices.SortFunc(d.Configs, func(a, b TopicConfig) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, d)
	}
	return out, nil
}

// configSource names where a config's value comes from: topic (an
// override of this topic), broker (a broker's static or dynamic config),
// broker-default (the cluster-wide dynamic default) or default.
func configSource(c kadm.Config) string {
	switch c.Source.String() {
	case "DYNAMIC_TOPIC_CONFIG":
		return "topic"
	case "DYNAMIC_BROKER_CONFIG", "STATIC_BROKER_CONFIG", "DYNAMIC_BROKER_LOGGER_CONFIG":
		return "broker"
	case "DYNAMIC_DEFAULT_BROKER_CONFIG":
		return "broker-default"
	default:
		return "default"
	}
}

// TopicResult is the outcome of creating, deleting or altering one topic.
type TopicResult struct {
	Topic string `json:"topic"`
	ID    string `json:"id,omitempty"`
	Error string `json:"error,omitempty"`
}

// printResults prints per-topic outcomes and fails when one failed.
func printResults(f *kafkaFlags, stdout io.Writer, out []TopicResult, what string) error {
	failed := 0
	err := f.output(stdout, out, func(w io.Writer) {
		fmt.Fprintln(w, "TOPIC\tID\tSTATUS")
		for _, r := range out {
			status := "OK"
			if r.Error != "" {
				status = r.Error
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", r.Topic, orDash(r.ID), status)
		}
	})
	for _, r := range out {
		if r.Error != "" {
			failed++
		}
	}
	if err == nil && failed > 0 {
		err = fmt.Errorf("%s failed for %d of %d topics", what, failed, len(out))
	}
	return err
}

// runTopicCreate is `strata topic create <topic>...`.
func runTopicCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("topic create", topicUsage, stderr)
	var partitions, replicas int
	f.fs.IntVar(&partitions, "partitions", -1, "partitions (-1: the broker's num.partitions)")
	f.fs.IntVar(&partitions, "p", -1, "short for --partitions")
	f.fs.IntVar(&replicas, "replicas", -1, "replication factor (-1: the broker's default.replication.factor)")
	f.fs.IntVar(&replicas, "r", -1, "short for --replicas")
	var configs keyValues
	f.fs.Var(&configs, "config", "topic config key=value (repeatable)")
	f.fs.Var(&configs, "c", "short for --config")
	names, adm, ctx, done, err := f.parseAndConnect(ctx, args, 1, -1, "one or more topics")
	if err != nil {
		return err
	}
	defer done()
	cfg := map[string]*string{}
	for _, kv := range configs.pairs() {
		cfg[kv[0]] = &kv[1]
	}
	resp, err := adm.CreateTopics(ctx, int32(partitions), int16(replicas), cfg, names...)
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	var out []TopicResult
	for _, r := range resp.Sorted() {
		out = append(out, TopicResult{Topic: r.Topic, ID: topicID(r.ID), Error: kafkaErr(r.Err, r.ErrMessage)})
	}
	return printResults(f, stdout, out, "create")
}

// runTopicDelete is `strata topic delete <topic>...`.
func runTopicDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("topic delete", topicUsage, stderr)
	names, adm, ctx, done, err := f.parseAndConnect(ctx, args, 1, -1, "one or more topics")
	if err != nil {
		return err
	}
	defer done()
	resp, err := adm.DeleteTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("delete topics: %w", err)
	}
	var out []TopicResult
	for _, r := range resp.Sorted() {
		out = append(out, TopicResult{Topic: r.Topic, ID: topicID(r.ID), Error: kafkaErr(r.Err, r.ErrMessage)})
	}
	return printResults(f, stdout, out, "delete")
}

// runTopicAlterConfig is `strata topic alter-config <topic>...`.
func runTopicAlterConfig(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("topic alter-config", topicUsage, stderr)
	var sets keyValues
	var deletes multiFlag
	f.fs.Var(&sets, "set", "set a config override: key=value (repeatable)")
	f.fs.Var(&deletes, "delete", "remove a config override, back to the default (repeatable, comma-separated)")
	names, err := f.parse(args, 1, -1, "one or more topics")
	if err != nil {
		return err
	}
	if len(sets)+len(deletes) == 0 {
		return errors.New("nothing to alter: give --set key=value or --delete key")
	}
	var alter []kadm.AlterConfig
	for _, kv := range sets.pairs() {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[0], Value: &kv[1]})
	}
	for _, k := range deletes {
		alter = append(alter, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	adm, ctx, done, err := f.adminRequests(ctx)
	if err != nil {
		return err
	}
	defer done()
	resp, err := adm.AlterTopicConfigs(ctx, alter, names...)
	if err != nil {
		return fmt.Errorf("alter topic configs: %w", err)
	}
	var out []TopicResult
	for _, r := range resp {
		out = append(out, TopicResult{Topic: r.Name, Error: kafkaErr(r.Err, r.ErrMessage)})
	}
	slices.SortFunc(out, func(a, b TopicResult) int { return strings.Compare(a.Topic, b.Topic) })
	return printResults(f, stdout, out, "alter-config")
}

// kafkaErr is a Kafka error with the broker's message, "" for none.
func kafkaErr(err error, msg string) string {
	if err == nil {
		return ""
	}
	if msg != "" {
		return err.Error() + ": " + msg
	}
	return err.Error()
}

// errIf is an error with text when cond holds, else nil.
func errIf(cond bool, text string) error {
	if cond {
		return errors.New(text)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// topicID prints a topic id as Kafka does (base64url, no padding); ""
// for none.
func topicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	return metadata.TopicID(id).String()
}
