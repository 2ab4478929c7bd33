// Package benchhook holds switches that only the in-process benchmark
// (test/bench) sets, so that it can measure in one run what a check
// costs against the path without it. They are no configuration: nothing
// outside this module can import the package, and nothing in it but the
// bench may set them. Each is read atomically, so a bench may flip one
// between runs of a broker in its process.
package benchhook

import "sync/atomic"

// SkipCompressedRecords makes record.Validate stop after the header of a
// compressed batch, as it did before it checked compressed records, unless
// the topic requires keys (which always needed the records).
var SkipCompressedRecords atomic.Bool

// BareTLS makes SSL listeners run TLS straight on the TCP connection,
// one read(2) and write(2) per record, as they did before wire.TLSBase
// went under it.
var BareTLS atomic.Bool
