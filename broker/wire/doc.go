// Package wire is the Kafka protocol's framing layer: it reads size-prefixed
// request frames (checking the size against socket.request.max.bytes before
// allocating, and growing the buffer as the bytes arrive, under a Budget
// that can pause reading), splits the request header from the body, decodes bodies with
// kmsg, and encodes responses — including Fetch responses whose record bytes
// stay in segment files and are written to the socket with sendfile.
//
// Frame layout (all big-endian): int32 size, then the request header
// (int16 api key, int16 api version, int32 correlation id, nullable string
// client id, and a tagged-field section when the request version is
// flexible), then the body. Responses are int32 size, int32 correlation id,
// a tagged-field section for flexible versions (never for ApiVersions), then
// the body.
//
// Under TLS, where sendfile cannot be used, a frame goes through a pooled
// buffer, and a TLSBase under the server's tls.Conn lets one read(2) or
// write(2) carry many 16 KiB TLS records instead of one each.
//
// Concurrency: the package holds no state but pooled buffers; a Frame or
// Request belongs to the goroutine that made it.
package wire
