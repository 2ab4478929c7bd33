// Package harness starts Strata brokers for tests and wraps the external
// Kafka clients the end-to-end suites talk to them with.
//
// Two ways to run a broker:
//
//   - Start runs broker.Server inside the test process on a loopback
//     listener, with its log directory (and the embedded etcd under it) in
//     t.TempDir(). Restart stops it and starts a new Server on the same
//     directories and the same port, so connected clients simply reconnect.
//   - StartProcess runs the real strata binary (built once per test binary
//     by `go build ./cmd/strata`) as a child process with a generated
//     properties file; Kill9 sends SIGKILL to model a crash, Restart starts
//     it again on the same directories and port; LaunchProcess starts it
//     without waiting until it answers (WaitReady waits). Call Main from
//     TestMain so the built binary is removed afterwards.
//
// Every child process (a broker binary, an etcd member) is a Child: its
// output appended to a log file, waited for on a goroutine of its own,
// stopped with a signal and a timeout, paused (SIGSTOP, every thread
// stopped) and resumed. Etcd and EtcdMember are paused, killed and
// restarted on their data for outage tests; NewEtcd prepares an etcd that
// Launch starts later. Child needs no testing.TB, so the
// cluster benchmark runs its processes with it too.
//
// Readiness is always a condition, never a sleep: the in-process broker
// closes Server.Ready(); the child process is polled with a TCP connect
// followed by ApiVersions and Metadata requests through franz-go until it
// answers or a deadline passes.
//
// Kcat, Python and PythonConfluent run /usr/bin/kcat and /usr/bin/python3
// (with Debian's python3-kafka or python3-confluent-kafka) with a timeout; a missing tool fails the test rather than
// skipping it, because `make test` installs them. BuildBatch and
// ProduceRaw make and send exact record batches for tests that must
// control the bytes.
//
// Concurrency: a Broker or Process belongs to one test goroutine; its
// methods are not meant to be called concurrently with each other (Addr may
// be called from any goroutine). The binary build is guarded by a sync.Once.
// Logs of every broker go to a file in the test's temp directory and the
// tail is printed when the test fails.
package harness
