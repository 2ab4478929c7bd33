package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// defaultBrokers is --brokers when neither the flag nor $STRATA_BROKERS
// is set.
const defaultBrokers = "localhost:9092"

// commandConfigHelp describes --command-config for every command that
// speaks the Kafka protocol.
const commandConfigHelp = `--command-config names a Kafka client properties file for a secured
listener, as Kafka's tools take it: security.protocol,
ssl.truststore.location or ssl.truststore.certificates (PEM),
ssl.keystore.location (PEM, for ssl.client.auth),
ssl.endpoint.identification.algorithm, sasl.mechanism (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512) and sasl.jaas.config with username and
password. --brokers defaults to $STRATA_BROKERS, else ` + defaultBrokers + `.`

// kafkaFlags are the flags every command that speaks the Kafka protocol
// takes (topic, group, cluster, txn): the seed brokers, the client
// security properties and the output format. A command adds its own
// flags to fs before parse.
type kafkaFlags struct {
	fs            *flag.FlagSet
	brokers       string
	commandConfig string
	format        string
	json          bool // --json, the same as --format json
}

// newKafkaFlags starts the flag set of `strata <name>`; usage is printed
// with -h, followed by the flags.
func newKafkaFlags(name, usage string, stderr io.Writer) *kafkaFlags {
	f := &kafkaFlags{fs: flag.NewFlagSet("strata "+name, flag.ContinueOnError)}
	f.fs.SetOutput(stderr)
	f.fs.Usage = func() {
		fmt.Fprintln(stderr, usage+"\n\nflags:")
		f.fs.PrintDefaults()
	}
	brokers := os.Getenv("STRATA_BROKERS")
	if brokers == "" {
		brokers = defaultBrokers
	}
	f.fs.StringVar(&f.brokers, "brokers", brokers, "comma-separated seed brokers (host:port)")
	f.fs.StringVar(&f.commandConfig, "command-config", "", "Kafka client properties file: security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config")
	f.fs.StringVar(&f.format, "format", "table", "output: table (for people) or json (for scripts)")
	f.fs.BoolVar(&f.json, "json", false, "same as --format json")
	return f
}

// parse parses args, flags and positional arguments in any order, and
// returns the positional ones; it refuses fewer than minArgs or more
// than maxArgs of them (maxArgs < 0: no limit).
func (f *kafkaFlags) parse(args []string, minArgs, maxArgs int, what string) ([]string, error) {
	var pos []string
	for range len(args) + 1 { // each round takes at least one argument
		if err := f.fs.Parse(args); err != nil {
			return nil, err
		}
		if f.fs.NArg() == 0 {
			break
		}
		pos = append(pos, f.fs.Arg(0))
		args = f.fs.Args()[1:]
	}
	switch f.format {
	case "table", "json":
	default:
		return nil, fmt.Errorf("--format %q: want table or json", f.format)
	}
	if f.json {
		f.format = "json"
	}
	if len(pos) < minArgs || (maxArgs >= 0 && len(pos) > maxArgs) {
		if len(pos) > 0 && maxArgs == 0 {
			return nil, fmt.Errorf("unexpected arguments %q", pos)
		}
		return nil, fmt.Errorf("want %s, got %q", what, pos)
	}
	return pos, nil
}

// asJSON reports whether the output is JSON.
func (f *kafkaFlags) asJSON() bool { return f.format == "json" }

// client connects to the seed brokers, secured as --command-config says,
// with opts after the connection options.
func (f *kafkaFlags) client(opts ...kgo.Opt) (*kgo.Client, error) {
	sec, err := commandConfigOptions(f.commandConfig)
	if err != nil {
		return nil, err
	}
	var seeds []string
	for _, s := range strings.Split(f.brokers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("--brokers: no broker given")
	}
	all := append(sec, kgo.SeedBrokers(seeds...), kgo.DialTimeout(clientDialTimeout))
	cl, err := kgo.NewClient(append(all, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", f.brokers, err)
	}
	return cl, nil
}

// admin is client wrapped for the admin requests.
func (f *kafkaFlags) admin() (*kadm.Client, error) {
	cl, err := f.client()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// adminRequests connects the admin client and bounds ctx by
// requestTimeout, for a command's requests; done cancels the context
// and closes the client.
func (f *kafkaFlags) adminRequests(ctx context.Context) (adm *kadm.Client, reqCtx context.Context, done func(), err error) {
	adm, err = f.admin()
	if err != nil {
		return nil, nil, nil, err
	}
	reqCtx, cancel := withTimeout(ctx)
	return adm, reqCtx, func() { cancel(); adm.Close() }, nil
}

// parseAndConnect is parse, then adminRequests, for the commands that
// check nothing else before they connect.
func (f *kafkaFlags) parseAndConnect(ctx context.Context, args []string, minArgs, maxArgs int, what string) (pos []string, adm *kadm.Client, reqCtx context.Context, done func(), err error) {
	if pos, err = f.parse(args, minArgs, maxArgs, what); err != nil {
		return nil, nil, nil, nil, err
	}
	adm, reqCtx, done, err = f.adminRequests(ctx)
	return pos, adm, reqCtx, done, err
}

// requestTimeout bounds one admin command's requests, so a broker that
// does not answer fails the command instead of hanging it.
const requestTimeout = 30 * time.Second

// withTimeout is ctx bounded by requestTimeout.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, requestTimeout)
}

// output prints v as JSON with --format json, else the table that table
// writes to an aligned writer.
func (f *kafkaFlags) output(w io.Writer, v any, table func(tw io.Writer)) error {
	if f.asJSON() {
		return writeJSON(w, v)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	table(tw)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// outputBlocks prints v as JSON with --format json, else each block's
// table, a blank line between two blocks.
func (f *kafkaFlags) outputBlocks(w io.Writer, v any, blocks []func(tw io.Writer)) error {
	if f.asJSON() {
		return writeJSON(w, v)
	}
	for i, b := range blocks {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := f.output(w, nil, b); err != nil {
			return err
		}
	}
	return nil
}

// keyValues collects repeatable key=value flags (--config, --set).
type keyValues []string

func (kv *keyValues) String() string { return strings.Join(*kv, ",") }

func (kv *keyValues) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("%q: want key=value", v)
	}
	*kv = append(*kv, v)
	return nil
}

// pairs splits the collected values at their first '='.
func (kv keyValues) pairs() [][2]string {
	out := make([][2]string, len(kv))
	for i, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		out[i] = [2]string{k, v}
	}
	return out
}

// ints prints node ids as a comma-separated list.
func ints(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

// errString is err's text, "" for nil (for JSON output).
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
