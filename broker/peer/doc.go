// Package peer is the client side of broker-to-broker requests over the
// Kafka protocol: Conn is one connection (the replica fetchers own one
// per fetch loop), and Client sends requests to brokers by id, as a
// broker forwards an admin request to the controller (KIP-590).
//
// Both reach other brokers through a Transport: their endpoint of the
// inter-broker listener, over TLS when that listener is SSL or SASL_SSL,
// and authenticated with SASL (KIP-152's SaslHandshake v1 and
// SaslAuthenticate, with franz-go's client mechanisms) when it is
// SASL_PLAINTEXT or SASL_SSL. A Conn re-authenticates before a request
// once most of the session lifetime the broker gave it has passed
// (KIP-368), so connections.max.reauth.ms does not close it.
//
// Requests a Client sends carry the client id ClientID, so a receiving
// broker knows the request came from another broker and never forwards
// it again: forwarding is one hop.
//
// Concurrency: a Conn belongs to one goroutine at a time. A Client is
// safe for concurrent use: its mu guards the idle connections (at most one
// per broker) and the closed flag; a request takes a connection out of
// the idle set (or dials one) for its duration, with mu not held, and
// puts it back afterwards, so requests to one broker run in parallel on
// connections of their own.
package peer
