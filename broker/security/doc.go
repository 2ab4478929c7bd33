// Package security is the TLS side of the broker's listeners: it turns a
// listener's ssl.* settings (Kafka's keys, PEM only: KIP-651) into
// crypto/tls configurations for the server side of an SSL listener
// (Server) and for the client side of inter-broker connections (Client),
// and names the principal of a connection from its client certificate
// (the subject's distinguished name in RFC 2253 form, rewritten by
// ssl.principal.mapping.rules), as Kafka's SslFactory,
// DefaultSslEngineFactory and SslPrincipalMapper do.
//
// Key stores and trust stores given as files are re-read when a file
// changes: a handshake checks the files' size and modification time at
// most every two seconds and loads them again if either moved, so new
// handshakes use new certificates without a restart; a file that no
// longer parses is logged and the last good material kept.
//
// Concurrency: Server and Client are safe for concurrent use; each
// reloading store guards its material and the time of its last check
// with a mutex held only while checking and swapping. Handshakes run on
// the connections' goroutines.
package security
