// Command strata is the Strata broker and its tools. Each subcommand lives
// in its own file; the commands table below is the only place that lists
// them.
//
// Concurrency: main runs one subcommand on the main goroutine with a
// context that is cancelled on the first SIGINT or SIGTERM; a second
// signal kills the process the default way.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one `strata <name>` subcommand. run gets the arguments after
// the name; a returned error is printed and makes strata exit 1
// (flag.ErrHelp exits 0).
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists every subcommand; adding one is adding one line.
var commands = []command{
	{"serve", "run a broker: strata serve --config server.properties [--set key=value]...", runServe},
	{"perf", "load generator: strata perf produce|consume --brokers host:port [flags]", runPerf},
	{"tier", "tiered storage: strata tier status|restore [--admin host:port] [flags]", runTier},
	{"topic", "topics: strata topic list|describe|create|delete|alter-config|produce|consume [--brokers host:port] [flags]", runTopic},
	{"group", "consumer groups: strata group list|describe|seek [--brokers host:port] [flags]", runGroup},
	{"cluster", "cluster: strata cluster info|health [--watch] [--brokers host:port] [flags]", runCluster},
	{"txn", "transactions: strata txn list|describe <id> [--brokers host:port] [flags]", runTxn},
	{"config", "print the effective configuration as a properties file", runConfig},
	{"probe", "health check: strata probe [--url http://127.0.0.1:9644/readyz] (exit 0 when it answers 200)", runProbe},
	{"version", "print the version", runVersion},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args to a subcommand and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		context.AfterFunc(ctx, stop) // after the first signal, the next one terminates at once
		err := c.run(ctx, args[1:], stdout, stderr)
		if err == nil || errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "strata %s: %v\n", c.name, err)
		return 1
	}
	fmt.Fprintf(stderr, "strata: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// subcommand is one `strata <command> <name>` of a command that has
// several (tier, txn).
type subcommand struct {
	name string
	run  func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// runSubcommand runs the subcommand of command that args[0] names; help is
// the command's usage text.
func runSubcommand(ctx context.Context, command, help string, subs []subcommand, args []string, stdout, stderr io.Writer) error {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	want := strings.Join(names, " or ")
	if len(args) == 0 {
		fmt.Fprintln(stderr, help)
		return fmt.Errorf("missing %s command (%s)", command, want)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(stdout, help)
		return flag.ErrHelp
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, args[1:], stdout, stderr)
		}
	}
	return fmt.Errorf("unknown %s command %q (want %s)", command, args[0], want)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: strata <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun \"strata <command> -h\" for a command's flags.")
}
