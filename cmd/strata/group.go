package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// groupUsage is the help of `strata group`.
const groupUsage = `usage: strata group list     [flags]
       strata group describe <group>... [flags]
       strata group seek     <group> --to start|end|<offset>|@<unix ms>|<RFC 3339 time> [--topics T,...] [--dry-run] [flags]
       strata group seek     <group> --to-file FILE [--dry-run] [flags]

The group commands speak the Kafka protocol (ListGroups, DescribeGroups,
ConsumerGroupDescribe, OffsetFetch, ListOffsets, OffsetCommit), so they
work against any broker of the cluster. Every command takes --brokers,
--command-config and --format table|json.
` + commandConfigHelp + `

list      prints each group: its type (classic or consumer), state,
          protocol type and coordinator.
describe  prints a group's state, protocol, members and, per partition,
          the committed offset, the log end offset, the lag and the member
          it is assigned to, with the total lag.
seek      commits new offsets for a group that has no members: to the
          partitions' start or end, to an offset, or to the first offset
          at or after a time, for every partition the group has offsets
          for (--topics: every partition of those topics); --to-file
          reads "topic partition offset" lines (as describe prints them).
          --dry-run prints the offsets without committing them.`

// runGroup is `strata group ...`.
func runGroup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, "group", groupUsage, []subcommand{
		{"list", runGroupList}, {"describe", runGroupDescribe}, {"seek", runGroupSeek},
	}, args, stdout, stderr)
}

// GroupSummary is one group as `strata group list` prints it.
type GroupSummary struct {
	Group        string `json:"group"`
	Type         string `json:"type"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

// runGroupList is `strata group list`.
func runGroupList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("group list", groupUsage, stderr)
	_, adm, ctx, done, err := f.parseAndConnect(ctx, args, 0, 0, "no arguments")
	if err != nil {
		return err
	}
	defer done()
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	out := []GroupSummary{}
	for _, g := range listed.Sorted() {
		out = append(out, GroupSummary{Group: g.Group, Type: orDash(g.GroupType), State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
	}
	return f.output(stdout, out, func(w io.Writer) {
		fmt.Fprintln(w, "GROUP\tTYPE\tSTATE\tPROTOCOL-TYPE\tCOORDINATOR")
		for _, g := range out {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\n", g.Group, g.Type, g.State, orDash(g.ProtocolType), g.Coordinator)
		}
	})
}

// GroupDescription is one group as `strata group describe` prints it.
type GroupDescription struct {
	Group        string         `json:"group"`
	Type         string         `json:"type"` // classic or consumer
	State        string         `json:"state"`
	ProtocolType string         `json:"protocol_type"`
	Protocol     string         `json:"protocol"` // the assignor
	Coordinator  int32          `json:"coordinator"`
	Members      []GroupMember  `json:"members"`
	Partitions   []PartitionLag `json:"partitions"`
	TotalLag     int64          `json:"total_lag"`
}

// GroupMember is one member of a described group.
type GroupMember struct {
	MemberID   string   `json:"member_id"`
	InstanceID string   `json:"instance_id,omitempty"`
	ClientID   string   `json:"client_id"`
	ClientHost string   `json:"client_host"`
	Assigned   []string `json:"assigned"` // topic-partition
}

// PartitionLag is a group's position in one partition.
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"` // -1: none
	LogEnd    int64  `json:"log_end"`   // -1: unknown
	Lag       int64  `json:"lag"`       // -1: unknown
	MemberID  string `json:"member_id,omitempty"`
	Error     string `json:"error,omitempty"`
}

// runGroupDescribe is `strata group describe <group>...`.
func runGroupDescribe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("group describe", groupUsage, stderr)
	groups, adm, ctx, done, err := f.parseAndConnect(ctx, args, 1, -1, "one or more groups")
	if err != nil {
		return err
	}
	defer done()
	var out []GroupDescription
	for _, g := range groups {
		d, err := describeGroup(ctx, adm, g)
		if err != nil {
			return err
		}
		out = append(out, d)
	}
	var blocks []func(io.Writer)
	for _, d := range out {
		blocks = append(blocks, func(w io.Writer) {
			fmt.Fprintf(w, "GROUP\t%s\nTYPE\t%s\nSTATE\t%s\nPROTOCOL\t%s/%s\nCOORDINATOR\t%d\nMEMBERS\t%d\nTOTAL-LAG\t%d\n\n",
				d.Group, d.Type, d.State, orDash(d.ProtocolType), orDash(d.Protocol), d.Coordinator, len(d.Members), d.TotalLag)
			fmt.Fprintln(w, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tMEMBER-ID\tCLIENT-ID\tHOST")
			byID := map[string]GroupMember{}
			for _, m := range d.Members {
				byID[m.MemberID] = m
			}
			for _, p := range d.Partitions {
				m := byID[p.MemberID]
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, offsetOrDash(p.Committed), offsetOrDash(p.LogEnd),
					offsetOrDash(p.Lag), orDash(p.MemberID), orDash(m.ClientID), orDash(m.ClientHost))
			}
		})
	}
	return f.outputBlocks(stdout, out, blocks)
}

// describeGroup describes a classic group with DescribeGroups, else a
// consumer (KIP-848) group with ConsumerGroupDescribe, and measures its
// lag: the log end offset (high watermark) minus the committed offset;
// an assigned partition without a commit lags by all its records.
func describeGroup(ctx context.Context, adm *kadm.Client, group string) (GroupDescription, error) {
	d := GroupDescription{Group: group, Type: "classic", Members: []GroupMember{}, Partitions: []PartitionLag{}}
	owner := map[kadm.Partition]string{}
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return d, fmt.Errorf("describe group %s: %w", group, err)
	}
	cg := described[group]
	if cg.Err == nil && cg.State != "Dead" {
		d.State, d.ProtocolType, d.Protocol, d.Coordinator = cg.State, cg.ProtocolType, cg.Protocol, cg.Coordinator.NodeID
		for _, m := range cg.Members {
			gm := GroupMember{MemberID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, ClientHost: m.ClientHost}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					for _, p := range t.Partitions {
						owner[kadm.Partition{Topic: t.Topic, Partition: p}] = m.MemberID
						gm.Assigned = append(gm.Assigned, fmt.Sprintf("%s-%d", t.Topic, p))
					}
				}
			}
			d.Members = append(d.Members, gm)
		}
	} else {
		cd, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return d, fmt.Errorf("describe group %s: %w", group, errors.Join(cg.Err, err))
		}
		c := cd[group]
		if c.Err != nil {
			if cg.Err != nil {
				return d, fmt.Errorf("describe group %s: %w", group, cg.Err)
			}
			d.State = "Dead" // unknown to the coordinator, as Kafka describes it
		} else {
			d.Type, d.State, d.ProtocolType, d.Protocol, d.Coordinator = "consumer", c.State, "consumer", c.AssignorName, c.Coordinator.NodeID
			for _, m := range c.Members {
				gm := GroupMember{MemberID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, ClientHost: m.ClientHost}
				for _, tp := range m.Assignment.Sorted() {
					for _, p := range tp.Partitions {
						owner[kadm.Partition{Topic: tp.Topic, Partition: p}] = m.MemberID
						gm.Assigned = append(gm.Assigned, fmt.Sprintf("%s-%d", tp.Topic, p))
					}
				}
				d.Members = append(d.Members, gm)
			}
		}
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return d, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	rows := map[kadm.Partition]*PartitionLag{}
	committed.Each(func(o kadm.OffsetResponse) {
		rows[kadm.Partition{Topic: o.Topic, Partition: o.Partition}] = &PartitionLag{Topic: o.Topic, Partition: o.Partition, Committed: o.At, Error: errString(o.Err)}
	})
	for tp := range owner {
		if rows[tp] == nil {
			rows[tp] = &PartitionLag{Topic: tp.Topic, Partition: tp.Partition, Committed: -1}
		}
	}
	topicSet := map[string]bool{}
	for tp := range rows {
		topicSet[tp.Topic] = true
	}
	topics := slices.Sorted(maps.Keys(topicSet))
	var ends, starts kadm.ListedOffsets
	if len(topics) > 0 {
		if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil {
			return d, fmt.Errorf("list end offsets: %w", err)
		}
		if starts, err = adm.ListStartOffsets(ctx, topics...); err != nil {
			return d, fmt.Errorf("list start offsets: %w", err)
		}
	}
	for tp, r := range rows {
		r.MemberID, r.LogEnd, r.Lag = owner[tp], -1, -1
		e, ok := ends.Lookup(tp.Topic, tp.Partition)
		if !ok || e.Err != nil {
			if r.Error == "" {
				r.Error = errString(errors.Join(e.Err, errIf(!ok, "no end offset")))
			}
			continue
		}
		r.LogEnd = e.Offset
		from := r.Committed
		if from < 0 {
			from = 0
			if s, ok := starts.Lookup(tp.Topic, tp.Partition); ok && s.Err == nil {
				from = s.Offset
			}
		}
		r.Lag = max(0, e.Offset-from)
		d.TotalLag += r.Lag
		d.Partitions = append(d.Partitions, *r)
	}
	slices.SortFunc(d.Partitions, func(a, b PartitionLag) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return d, nil
}

// SeekResult is one partition's offset change by `strata group seek`.
type SeekResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Previous  int64  `json:"previous"` // -1: none
	Offset    int64  `json:"offset"`
	Error     string `json:"error,omitempty"`
}

// runGroupSeek is `strata group seek <group> --to ...|--to-file FILE`.
func runGroupSeek(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("group seek", groupUsage, stderr)
	to := f.fs.String("to", "", "start, end, an offset, @<unix ms> or an RFC 3339 time")
	toFile := f.fs.String("to-file", "", `file of "topic partition offset" lines`)
	var topics multiFlag
	f.fs.Var(&topics, "topics", "seek every partition of these topics (comma-separated; default: the group's)")
	dry := f.fs.Bool("dry-run", false, "print the new offsets without committing them")
	pos, err := f.parse(args, 1, 1, "one group")
	if err != nil {
		return err
	}
	group := pos[0]
	if (*to == "") == (*toFile == "") {
		return errors.New("give one of --to and --to-file")
	}
	if *toFile != "" && len(topics) > 0 {
		return errors.New("--topics goes with --to, not --to-file")
	}
	adm, ctx, done, err := f.adminRequests(ctx)
	if err != nil {
		return err
	}
	defer done()
	prev, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	var target kadm.Offsets
	if *toFile != "" {
		target, err = readOffsetsFile(*toFile)
	} else {
		target, err = seekTargets(ctx, adm, prev, topics, *to)
	}
	if err != nil {
		return err
	}
	if len(target) == 0 {
		return fmt.Errorf("group %s has no offsets to seek: name the topics with --topics", group)
	}
	var out []SeekResult
	var committed kadm.OffsetResponses
	if !*dry {
		if committed, err = adm.CommitOffsets(ctx, group, target); err != nil {
			return fmt.Errorf("commit offsets of group %s: %w", group, err)
		}
	}
	failed := 0
	for _, o := range target.Sorted() {
		r := SeekResult{Topic: o.Topic, Partition: o.Partition, Previous: -1, Offset: o.At}
		if p, ok := prev.Lookup(o.Topic, o.Partition); ok && p.Err == nil {
			r.Previous = p.At
		}
		if c, ok := committed.Lookup(o.Topic, o.Partition); ok && c.Err != nil {
			r.Error = c.Err.Error()
			failed++
		}
		out = append(out, r)
	}
	err = f.output(stdout, out, func(w io.Writer) {
		fmt.Fprintln(w, "TOPIC\tPARTITION\tPREVIOUS-OFFSET\tNEW-OFFSET\tERROR")
		for _, r := range out {
			fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%s\n", r.Topic, r.Partition, offsetOrDash(r.Previous), r.Offset, orDash(r.Error))
		}
	})
	if err == nil && failed > 0 {
		err = fmt.Errorf("commit failed for %d of %d partitions (a group with members cannot be seeked)", failed, len(out))
	}
	return err
}

// seekTargets computes --to for the partitions of topics, or of the
// group's committed offsets.
func seekTargets(ctx context.Context, adm *kadm.Client, prev kadm.OffsetResponses, topics []string, to string) (kadm.Offsets, error) {
	every := len(topics) > 0 // every partition of the topics named
	if !every {
		for t := range prev {
			topics = append(topics, t)
		}
		slices.Sort(topics)
	}
	if len(topics) == 0 {
		return nil, nil
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	var listed kadm.ListedOffsets
	var exact int64 = -1
	switch {
	case to == "start":
		listed, err = adm.ListStartOffsets(ctx, topics...)
	case to == "end":
		listed = ends
	case strings.HasPrefix(to, "@"):
		ms, perr := strconv.ParseInt(to[1:], 10, 64)
		if perr != nil {
			return nil, fmt.Errorf("--to %s: want @<unix ms>", to)
		}
		listed, err = adm.ListOffsetsAfterMilli(ctx, ms, topics...)
	default:
		if t, terr := time.Parse(time.RFC3339, to); terr == nil {
			listed, err = adm.ListOffsetsAfterMilli(ctx, t.UnixMilli(), topics...)
		} else if exact, err = strconv.ParseInt(to, 10, 64); err != nil || exact < 0 {
			return nil, fmt.Errorf("--to %q: want start, end, an offset, @<unix ms> or an RFC 3339 time", to)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	target := kadm.Offsets{}
	var errs []error
	ends.Each(func(e kadm.ListedOffset) {
		if _, had := prev.Lookup(e.Topic, e.Partition); !had && !every {
			return // a partition the group has no offset for
		}
		at := exact
		if at < 0 {
			l, ok := listed.Lookup(e.Topic, e.Partition)
			if !ok || l.Err != nil {
				errs = append(errs, fmt.Errorf("%s-%d: %w", e.Topic, e.Partition, errors.Join(l.Err, errIf(!ok, "no offset listed"))))
				return
			}
			at = l.Offset
		}
		target.AddOffset(e.Topic, e.Partition, min(at, e.Offset), -1)
	})
	return target, errors.Join(errs...)
}

// readOffsetsFile reads "topic partition offset" lines; blank lines and
// lines starting with # are skipped.
func readOffsetsFile(path string) (kadm.Offsets, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--to-file: %w", err)
	}
	defer fh.Close()
	target := kadm.Offsets{}
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 3 {
			return nil, fmt.Errorf("%s:%d: want \"topic partition offset\", got %q", path, n, line)
		}
		p, perr := strconv.ParseInt(fs[1], 10, 32)
		o, oerr := strconv.ParseInt(fs[2], 10, 64)
		if perr != nil || oerr != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("%s:%d: bad partition or offset in %q", path, n, line)
		}
		target.AddOffset(fs[0], int32(p), o, -1)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return target, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
