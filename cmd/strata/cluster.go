package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// clusterUsage is the help of `strata cluster`.
const clusterUsage = `usage: strata cluster info   [flags]
       strata cluster health [--watch [--interval D] [--exit-when-healthy]] [flags]

The cluster commands read the cluster's metadata over the Kafka protocol
(Metadata), so they work against any broker of the cluster. Every command
takes --brokers, --command-config and --format table|json.
` + commandConfigHelp + `

info    prints the cluster id, the controller, the brokers (id, host,
        port, rack) and the topic and partition counts.
health  checks that every broker a partition is assigned to is up, that
        every partition has a leader (else it is offline) and that every
        partition's ISR holds all its replicas (else it is
        under-replicated); it exits 1 while any check fails. --watch
        checks again every --interval, printing each change, until
        interrupted (the exit code is the last check's) or, with
        --exit-when-healthy, until the cluster is healthy.`

// runCluster is `strata cluster ...`.
func runCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, "cluster", clusterUsage, []subcommand{
		{"info", runClusterInfo}, {"health", runClusterHealth},
	}, args, stdout, stderr)
}

// ClusterInfo is what `strata cluster info` prints.
type ClusterInfo struct {
	ClusterID  string       `json:"cluster_id"`
	Controller int32        `json:"controller"`
	Brokers    []BrokerInfo `json:"brokers"`
	Topics     int          `json:"topics"`
	Partitions int          `json:"partitions"`
}

// BrokerInfo is one live broker of the cluster.
type BrokerInfo struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
}

// runClusterInfo is `strata cluster info`.
func runClusterInfo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("cluster info", clusterUsage, stderr)
	_, adm, ctx, done, err := f.parseAndConnect(ctx, args, 0, 0, "no arguments")
	if err != nil {
		return err
	}
	defer done()
	md, err := adm.Metadata(ctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	info := ClusterInfo{ClusterID: md.Cluster, Controller: md.Controller, Topics: len(md.Topics)}
	for _, b := range md.Brokers {
		info.Brokers = append(info.Brokers, BrokerInfo{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: deref(b.Rack)})
	}
	for _, t := range md.Topics {
		info.Partitions += len(t.Partitions)
	}
	return f.output(stdout, info, func(w io.Writer) {
		fmt.Fprintf(w, "CLUSTER\t%s\nCONTROLLER\t%d\nTOPICS\t%d\nPARTITIONS\t%d\n\n", orDash(info.ClusterID), info.Controller, info.Topics, info.Partitions)
		fmt.Fprintln(w, "ID\tHOST\tPORT\tRACK")
		for _, b := range info.Brokers {
			ctl := ""
			if b.ID == info.Controller {
				ctl = "*"
			}
			fmt.Fprintf(w, "%d%s\t%s\t%d\t%s\n", b.ID, ctl, b.Host, b.Port, orDash(b.Rack))
		}
	})
}

// ClusterHealth is what `strata cluster health` prints.
type ClusterHealth struct {
	Healthy         bool     `json:"healthy"`
	Controller      int32    `json:"controller"`
	Brokers         []int32  `json:"brokers"`          // up
	DownBrokers     []int32  `json:"down_brokers"`     // assigned replicas, not up
	UnderReplicated []string `json:"under_replicated"` // topic-partition
	Offline         []string `json:"offline"`          // topic-partition, no leader
}

// errUnhealthy makes `strata cluster health` exit 1.
var errUnhealthy = errors.New("cluster is not healthy")

// runClusterHealth is `strata cluster health`.
func runClusterHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("cluster health", clusterUsage, stderr)
	watch := f.fs.Bool("watch", false, "check again every --interval, printing each change")
	interval := f.fs.Duration("interval", 2*time.Second, "time between checks with --watch")
	untilHealthy := f.fs.Bool("exit-when-healthy", false, "with --watch, exit 0 as soon as the cluster is healthy")
	if _, err := f.parse(args, 0, 0, "no arguments"); err != nil {
		return err
	}
	if *interval <= 0 {
		return fmt.Errorf("--interval %s: want a positive duration", *interval)
	}
	adm, err := f.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	var last *ClusterHealth
	tick := time.NewTicker(*interval)
	defer tick.Stop()
loop:
	for {
		h, err := checkHealth(ctx, adm)
		switch {
		case err != nil && !*watch:
			return err
		case err != nil:
			fmt.Fprintf(stderr, "%s: %v\n", time.Now().Format(time.RFC3339), err)
		case last == nil || !sameHealth(*last, h):
			if *watch && !f.asJSON() {
				fmt.Fprintf(stdout, "%s\n", time.Now().Format(time.RFC3339))
			}
			if err := f.output(stdout, h, func(w io.Writer) { printHealth(w, h) }); err != nil {
				return err
			}
			last = &h
		}
		if !*watch || (*untilHealthy && last != nil && last.Healthy) {
			break
		}
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
		}
	}
	switch {
	case last == nil:
		return errUnhealthy
	case !last.Healthy:
		return fmt.Errorf("%w: %d under-replicated and %d offline partitions, brokers down: %s, controller %d",
			errUnhealthy, len(last.UnderReplicated), len(last.Offline), ints(last.DownBrokers), last.Controller)
	}
	return nil
}

// checkHealth reads the metadata once.
func checkHealth(ctx context.Context, adm *kadm.Client) (ClusterHealth, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	md, err := adm.Metadata(ctx)
	if err != nil {
		return ClusterHealth{}, fmt.Errorf("metadata: %w", err)
	}
	return healthOf(md), nil
}

// healthOf judges the cluster from its metadata.
func healthOf(md kadm.Metadata) ClusterHealth {
	h := ClusterHealth{Controller: md.Controller, Brokers: md.Brokers.NodeIDs(), DownBrokers: []int32{}, UnderReplicated: []string{}, Offline: []string{}}
	up := map[int32]bool{}
	for _, id := range h.Brokers {
		up[id] = true
	}
	for _, t := range md.Topics.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			name := fmt.Sprintf("%s-%d", t.Topic, p.Partition)
			for _, r := range p.Replicas {
				if !up[r] && !slices.Contains(h.DownBrokers, r) {
					h.DownBrokers = append(h.DownBrokers, r)
				}
			}
			switch {
			case p.Leader < 0 || !up[p.Leader]:
				h.Offline = append(h.Offline, name)
			case len(p.ISR) < len(p.Replicas) || len(p.OfflineReplicas) > 0:
				h.UnderReplicated = append(h.UnderReplicated, name)
			}
		}
	}
	slices.Sort(h.DownBrokers)
	h.Healthy = len(h.DownBrokers) == 0 && len(h.UnderReplicated) == 0 && len(h.Offline) == 0 && md.Controller >= 0
	return h
}

func sameHealth(a, b ClusterHealth) bool {
	return a.Healthy == b.Healthy && a.Controller == b.Controller && slices.Equal(a.Brokers, b.Brokers) && slices.Equal(a.DownBrokers, b.DownBrokers) &&
		slices.Equal(a.UnderReplicated, b.UnderReplicated) && slices.Equal(a.Offline, b.Offline)
}

// printHealth prints the checks, and at most 20 partitions of each.
func printHealth(w io.Writer, h ClusterHealth) {
	list := func(s []string) string {
		if len(s) > 20 {
			return fmt.Sprintf("%v and %d more", s[:20], len(s)-20)
		}
		if len(s) == 0 {
			return "-"
		}
		return fmt.Sprint(s)
	}
	fmt.Fprintf(w, "HEALTHY\t%v\nCONTROLLER\t%d\nBROKERS\t%s\nDOWN-BROKERS\t%s\nUNDER-REPLICATED\t%d %s\nOFFLINE\t%d %s\n",
		h.Healthy, h.Controller, ints(h.Brokers), ints(h.DownBrokers), len(h.UnderReplicated), list(h.UnderReplicated), len(h.Offline), list(h.Offline))
}
