package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/strata-broker/strata/broker"
)

// defaultAdmin is metrics.listener's default: the admin endpoints live there.
const defaultAdmin = "127.0.0.1:9644"

// tierUsage is the help of `strata tier`.
const tierUsage = `usage: strata tier status  [--admin host:port]... [--command-config F] [--topic T] [--json]
       strata tier restore --topic T [--admin host:port]... [--command-config F] [--topic-id HEX]
                           [--partitions N] [--replication-factor R] [--config key=value]... [--resume]

The tier commands talk to the brokers' admin endpoints, served on each
broker's metrics.listener (default 127.0.0.1:9644) beside /metrics, so they
work the same with embedded or external etcd. --admin is repeatable and
takes comma-separated lists. --command-config names a properties file
for a secured endpoint: metrics.listener.security.protocol=SSL (https,
with the ssl.truststore.* keys and ssl.keystore.* for a client
certificate, as for Kafka listeners) and metrics.auth.bearer.token or
metrics.auth.basic.username and metrics.auth.basic.password.

status   prints, per partition each broker hosts: its role, local log start,
         local bytes, log end, remote (tiered) start/end offsets and bytes,
         copies, the copy lag (sealed, committed segments and bytes not yet
         copied; leaders only) and the last tiering error.
restore  recreates a topic whose metadata and local logs are lost from the
         bucket alone: the per-partition manifests give the topic id, the
         partition count, the config overrides and the finished copies.
         The first --admin broker creates the topic (same id, the recorded
         configs with --config over them and remote.storage.enable=true)
         and its segment records; every --admin broker then
         starts the empty logs of the partitions it leads after the tiered
         end, so consumers read everything from offset 0 and producers
         continue after it. A topic that exists is refused; --resume only
         does the second step (brokers that were not listed the first time).
         Do not produce to the topic before restore returns.`

// runTier is `strata tier status|restore [flags]`.
func runTier(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, "tier", tierUsage, []subcommand{{"status", runTierStatus}, {"restore", runTierRestore}}, args, stdout, stderr)
}

// adminFlags collects --admin host:port values, repeatable and comma
// separated.
type adminFlags []string

func (a *adminFlags) String() string { return strings.Join(*a, ",") }

func (a *adminFlags) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
			return fmt.Errorf("admin address %q: want host:port", s)
		}
		*a = append(*a, s)
	}
	return nil
}

// list is the addresses given, or the default one.
func (a adminFlags) list() []string {
	if len(a) == 0 {
		return []string{defaultAdmin}
	}
	return a
}

// tierFlags starts a tier subcommand's flag set with --admin and
// --command-config.
func tierFlags(name string, stderr io.Writer, admins *adminFlags, commandConfig *string) *flag.FlagSet {
	fs := flag.NewFlagSet("strata tier "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, tierUsage+"\n\nflags:"); fs.PrintDefaults() }
	fs.Var(admins, "admin", "broker admin address, metrics.listener (repeatable, comma-separated; default "+defaultAdmin+")")
	fs.StringVar(commandConfig, "command-config", "", "properties file for the metrics endpoint: metrics.listener.security.protocol, ssl.*, metrics.auth.bearer.token, metrics.auth.basic.username/password")
	return fs
}

// parseTierFlags parses args and refuses positional arguments.
func parseTierFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// runTierStatus is `strata tier status`.
func runTierStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var admins adminFlags
	var commandConfig string
	fs := tierFlags("status", stderr, &admins, &commandConfig)
	topic := fs.String("topic", "", "only this topic")
	asJSON := fs.Bool("json", false, "print the brokers' answers as JSON")
	if err := parseTierFlags(fs, args); err != nil {
		return err
	}
	client, err := newAdminClient(commandConfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	q := url.Values{}
	if *topic != "" {
		q.Set("topic", *topic)
	}
	var all []broker.TierStatus
	var errs []error
	for _, addr := range admins.list() {
		var st broker.TierStatus
		if err := client.call(ctx, http.MethodGet, addr, "/v1/tier/status", q, nil, &st); err != nil {
			errs = append(errs, err)
			continue
		}
		all = append(all, st)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	} else if err := printTierStatus(stdout, all); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// printTierStatus prints one aligned row per partition replica.
func printTierStatus(w io.Writer, all []broker.TierStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tTOPIC\tPARTITION\tROLE\tLOCAL-START\tLOCAL-BYTES\tLOG-END\tREMOTE-START\tREMOTE-END\tREMOTE-BYTES\tCOPIES\tLAG-SEGMENTS\tLAG-BYTES\tLAST-ERROR")
	var notes []string
	for _, st := range all {
		if !st.TieringEnabled {
			notes = append(notes, fmt.Sprintf("broker %d: tiered storage is disabled (remote.log.storage.system.enable=false)", st.Broker))
		}
		for _, p := range st.Partitions {
			role, remote, lag := "follower", "-\t-\t-\t-", "-\t-"
			if p.Leader {
				role = "leader"
				lag = fmt.Sprintf("%d\t%d", p.CopyLagSegments, p.CopyLagBytes)
			}
			if p.Tiered {
				remote = fmt.Sprintf("%s\t%s\t%d\t%d", offsetOrDash(p.RemoteStart), offsetOrDash(p.RemoteEnd), p.RemoteBytes, p.RemoteCopies)
			} else {
				lag = "-\t-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", p.Broker, p.Topic, p.Partition, role,
				p.LocalStart, p.LocalBytes, p.LogEnd, remote, lag, oneLine(p.LastError, 80))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return nil
}

func offsetOrDash(o int64) string {
	if o < 0 {
		return "-"
	}
	return strconv.FormatInt(o, 10)
}

// oneLine flattens s and cuts it at n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	if s == "" {
		return "-"
	}
	return s
}
