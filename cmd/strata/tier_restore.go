package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/strata-broker/strata/broker"
)

// restoreTimeout bounds a restore: listing a large bucket and writing one
// etcd record per copy takes a while.
const restoreTimeout = 30 * time.Minute

// runTierRestore is `strata tier restore`.
func runTierRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var admins adminFlags
	var configs setFlags
	var commandConfig string
	fs := tierFlags("restore", stderr, &admins, &commandConfig)
	var req broker.TierRestoreRequest
	fs.StringVar(&req.Topic, "topic", "", "the topic to recreate from the bucket (required)")
	fs.StringVar(&req.TopicID, "topic-id", "", "its topic id (32 hex digits, as in object keys), when the bucket holds several")
	partitions := fs.Int("partitions", 0, "partition count (default: as the manifests recorded it, at least the highest partition in the bucket + 1)")
	rf := fs.Int("replication-factor", 0, "replicas per partition (default: default.replication.factor, at most the live brokers)")
	fs.Var(&configs, "config", "topic config override key=value (repeatable), over those the manifests recorded; remote.storage.enable=true is always set")
	resume := fs.Bool("resume", false, "the topic is restored already: only start the logs of the partitions these brokers lead")
	if err := parseTierFlags(fs, args); err != nil {
		return err
	}
	if req.Topic == "" {
		return errors.New("--topic is required")
	}
	if *partitions < 0 || *partitions > 1<<20 || *rf < 0 || *rf > 1<<10 {
		return fmt.Errorf("--partitions %d or --replication-factor %d out of range", *partitions, *rf)
	}
	req.Partitions, req.ReplicationFactor = int32(*partitions), int16(*rf)
	for _, kv := range configs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--config %q: want key=value", kv)
		}
		if req.Configs == nil {
			req.Configs = map[string]string{}
		}
		req.Configs[k] = v
	}
	client, err := newAdminClient(commandConfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, restoreTimeout)
	defer cancel()
	addrs := admins.list()
	var results []broker.TierRestoreResult
	q := url.Values{"topic": {req.Topic}}
	if !*resume {
		var res broker.TierRestoreResult
		if err := client.call(ctx, http.MethodPost, addrs[0], "/v1/tier/restore", nil, req, &res); err != nil {
			return err
		}
		results, addrs = append(results, res), addrs[1:]
		q.Set("rev", strconv.FormatInt(res.Revision, 10))
	}
	for _, addr := range addrs {
		var res broker.TierRestoreResult
		if err := client.call(ctx, http.MethodPost, addr, "/v1/tier/start", q, nil, &res); err != nil {
			return err
		}
		results = append(results, res)
	}
	return printRestore(stdout, stderr, results)
}

// printRestore prints the restored partitions: the copies the first
// broker found and, per partition, where its leader's log now starts; it
// fails when a leader was not among the brokers asked.
func printRestore(stdout, stderr io.Writer, results []broker.TierRestoreResult) error {
	if len(results) == 0 {
		return errors.New("no broker answered")
	}
	merged := map[int32]broker.TierRestoredPartition{}
	for _, res := range results {
		for _, p := range res.Partitions {
			m, ok := merged[p.Partition]
			if !ok || p.Copies > m.Copies {
				m.Partition, m.Leader, m.Copies = p.Partition, p.Leader, p.Copies
				m.RemoteStart, m.RemoteEnd, m.RemoteBytes = p.RemoteStart, p.RemoteEnd, p.RemoteBytes
			}
			if p.Started {
				m.Started, m.LogEnd = true, p.LogEnd
			}
			merged[p.Partition] = m
		}
	}
	first := results[0]
	fmt.Fprintf(stdout, "topic %s (id %s)\n", first.Topic, first.TopicID)
	for _, key := range first.Missing {
		fmt.Fprintf(stderr, "warning: the manifest names %s but its objects are gone; its offsets are not restored\n", key)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tCOPIES\tREMOTE-START\tREMOTE-END\tREMOTE-BYTES\tLOG-END")
	var pending []string
	for _, idx := range slices.Sorted(maps.Keys(merged)) {
		p := merged[idx]
		end := offsetOrDash(p.LogEnd)
		if !p.Started {
			end = fmt.Sprintf("pending (leader %d)", p.Leader)
			pending = append(pending, fmt.Sprintf("%d (broker %d)", p.Partition, p.Leader))
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%d\t%s\n", p.Partition, p.Leader, p.Copies, offsetOrDash(p.RemoteStart), offsetOrDash(p.RemoteEnd), p.RemoteBytes, end)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if len(pending) > 0 {
		return fmt.Errorf("partitions %s are led by brokers not given with --admin: run strata tier restore --resume --topic %s --admin <their metrics.listener>",
			strings.Join(pending, ", "), first.Topic)
	}
	return nil
}
