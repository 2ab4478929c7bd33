package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// txnUsage is the help of `strata txn`.
const txnUsage = `usage: strata txn list     [--brokers host:port,...] [--command-config F] [--state S]... [--min-age D] [--format table|json]
       strata txn describe <transactional id> [--brokers host:port,...] [--command-config F] [--format table|json]

The txn commands ask the cluster's transaction coordinators over the Kafka
protocol (ListTransactions, DescribeTransactions, DescribeProducers), so
they work against any broker of the cluster.
` + commandConfigHelp + `

list      prints every transactional id: its producer id and epoch, state,
          age (time since its open transaction started; - with none open),
          timeout, partitions and coordinator. --state keeps the ids in
          one of the states given (Ongoing, PrepareCommit, ...); --min-age
          those whose open transaction is at least that old, to find
          hanging transactions.
describe  prints one transactional id as list does, and for each of its
          partitions the leader's producer state: the producer's epoch,
          last sequence and the first offset of its open transaction
          (which holds the partition's last stable offset back).`

// runTxn is `strata txn list|describe [flags]`.
func runTxn(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, "txn", txnUsage, []subcommand{{"list", runTxnList}, {"describe", runTxnDescribe}}, args, stdout, stderr)
}

// TxnInfo is one transactional id as the txn commands print it.
type TxnInfo struct {
	TransactionalID string         `json:"transactional_id"`
	ProducerID      int64          `json:"producer_id"`
	ProducerEpoch   int16          `json:"producer_epoch"`
	State           string         `json:"state"`
	StartMs         int64          `json:"start_ms"` // -1: no transaction open
	AgeMs           int64          `json:"age_ms"`   // -1: no transaction open
	TimeoutMs       int32          `json:"timeout_ms"`
	Coordinator     int32          `json:"coordinator"`
	Partitions      []TxnPartition `json:"partitions"`
}

// TxnPartition is a partition of a transaction, with its leader's state
// of the transaction's producer (describe only).
type TxnPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// From DescribeProducers; Found is false when the leader does not
	// know the producer.
	Found          bool   `json:"found,omitempty"`
	Leader         int32  `json:"leader,omitempty"`
	ProducerEpoch  int16  `json:"producer_epoch,omitempty"`
	LastSequence   int32  `json:"last_sequence,omitempty"`
	LastTimestamp  int64  `json:"last_timestamp,omitempty"`
	TxnStartOffset int64  `json:"txn_start_offset,omitempty"`
	Error          string `json:"error,omitempty"`
}

// txnInfo turns a described transaction into a TxnInfo at now.
func txnInfo(d kadm.DescribedTransaction, now time.Time) TxnInfo {
	ti := TxnInfo{TransactionalID: d.TxnID, ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch, State: d.State,
		StartMs: d.StartTimestamp, AgeMs: -1, TimeoutMs: d.TimeoutMillis, Coordinator: d.Coordinator}
	if d.StartTimestamp >= 0 {
		ti.AgeMs = max(0, now.UnixMilli()-d.StartTimestamp)
	}
	for _, tp := range d.Topics.Sorted() {
		for _, p := range tp.Partitions {
			ti.Partitions = append(ti.Partitions, TxnPartition{Topic: tp.Topic, Partition: p})
		}
	}
	return ti
}

// describeTxns describes ids, sorted by transactional id.
func describeTxns(ctx context.Context, adm *kadm.Client, ids []string) ([]TxnInfo, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ds, err := adm.DescribeTransactions(ctx, ids...)
	if err != nil {
		return nil, fmt.Errorf("describe transactions: %w", err)
	}
	now := time.Now()
	var out []TxnInfo
	for _, d := range ds.Sorted() {
		if d.Err != nil {
			return nil, fmt.Errorf("describe %s: %w", d.TxnID, d.Err)
		}
		out = append(out, txnInfo(d, now))
	}
	return out, nil
}

// runTxnList is `strata txn list`.
func runTxnList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("txn list", txnUsage, stderr)
	var states multiFlag
	f.fs.Var(&states, "state", "keep ids in this state (repeatable, comma-separated)")
	minAge := f.fs.Duration("min-age", 0, "keep ids whose open transaction is at least this old")
	_, adm, ctx, done, err := f.parseAndConnect(ctx, args, 0, 0, "no arguments")
	if err != nil {
		return err
	}
	defer done()
	listed, err := adm.ListTransactions(ctx, nil, states)
	if err != nil {
		return fmt.Errorf("list transactions: %w", err)
	}
	var ids []string
	for _, l := range listed.Sorted() {
		ids = append(ids, l.TxnID)
	}
	all, err := describeTxns(ctx, adm, ids)
	if err != nil {
		return err
	}
	if *minAge > 0 {
		all = slices.DeleteFunc(all, func(ti TxnInfo) bool { return ti.AgeMs < minAge.Milliseconds() })
	}
	return f.output(stdout, all, func(w io.Writer) {
		fmt.Fprintln(w, "TRANSACTIONAL-ID\tPRODUCER-ID\tEPOCH\tSTATE\tAGE\tTIMEOUT\tPARTITIONS\tCOORDINATOR")
		for _, ti := range all {
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d\n", ti.TransactionalID, ti.ProducerID, ti.ProducerEpoch, ti.State,
				age(ti.AgeMs), time.Duration(ti.TimeoutMs)*time.Millisecond, partitionList(ti.Partitions), ti.Coordinator)
		}
	})
}

// runTxnDescribe is `strata txn describe <id>`.
func runTxnDescribe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("txn describe", txnUsage, stderr)
	pos, adm, ctx, done, err := f.parseAndConnect(ctx, args, 1, 1, "one transactional id")
	if err != nil {
		return err
	}
	defer done()
	all, err := describeTxns(ctx, adm, pos)
	if err != nil {
		return err
	}
	ti := all[0]
	if len(ti.Partitions) > 0 {
		if err := producerStates(ctx, adm, &ti); err != nil {
			return err
		}
	}
	if f.asJSON() {
		return writeJSON(stdout, ti)
	}
	fmt.Fprintf(stdout, "transactional id: %s\nproducer id:      %d\nproducer epoch:   %d\nstate:            %s\nage:              %s\ntimeout:          %s\ncoordinator:      %d\n",
		ti.TransactionalID, ti.ProducerID, ti.ProducerEpoch, ti.State, age(ti.AgeMs), time.Duration(ti.TimeoutMs)*time.Millisecond, ti.Coordinator)
	if len(ti.Partitions) == 0 {
		fmt.Fprintln(stdout, "partitions:       -")
		return nil
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLEADER\tPRODUCER-EPOCH\tLAST-SEQUENCE\tTXN-START-OFFSET\tNOTE")
	for _, p := range ti.Partitions {
		switch {
		case p.Error != "":
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\t%s\n", p.Topic, p.Partition, p.Error)
		case !p.Found:
			fmt.Fprintf(tw, "%s\t%d\t%d\t-\t-\t-\tproducer not in the partition's state\n", p.Topic, p.Partition, p.Leader)
		default:
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t-\n", p.Topic, p.Partition, p.Leader, p.ProducerEpoch, p.LastSequence, offsetOrDash(p.TxnStartOffset))
		}
	}
	return tw.Flush()
}

// producerStates fills ti's partitions with their leaders' state of the
// transaction's producer (DescribeProducers).
func producerStates(ctx context.Context, adm *kadm.Client, ti *TxnInfo) error {
	set := kadm.TopicsSet{}
	for _, p := range ti.Partitions {
		set.Add(p.Topic, p.Partition)
	}
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return fmt.Errorf("describe producers: %w", err)
	}
	for i := range ti.Partitions {
		p := &ti.Partitions[i]
		dp, ok := described[p.Topic].Partitions[p.Partition]
		switch {
		case !ok:
			p.Error = "not described"
		case dp.Err != nil:
			p.Error = dp.Err.Error()
		default:
			p.Leader = dp.Leader
			for _, ap := range dp.ActiveProducers {
				if ap.ProducerID == ti.ProducerID {
					p.Found, p.ProducerEpoch, p.LastSequence, p.LastTimestamp, p.TxnStartOffset = true, ap.ProducerEpoch, ap.LastSequence, ap.LastTimestamp, ap.CurrentTxnStartOffset
				}
			}
		}
	}
	return nil
}

// multiFlag collects a repeatable, comma-separated string flag.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*m = append(*m, s)
		}
	}
	return nil
}

// age prints a transaction's age, - when none is open.
func age(ms int64) string {
	if ms < 0 {
		return "-"
	}
	return (time.Duration(ms) * time.Millisecond).Truncate(time.Second).String()
}

// partitionList prints partitions as topic-partition, comma separated.
func partitionList(ps []TxnPartition) string {
	if len(ps) == 0 {
		return "-"
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%s-%d", p.Topic, p.Partition)
	}
	return strings.Join(out, ",")
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
