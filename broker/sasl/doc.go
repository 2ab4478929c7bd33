// Package sasl holds the server side of Strata's SASL mechanisms, the
// part of Kafka's SaslServer that turns a client's SaslAuthenticate bytes
// into a principal. It knows nothing of connections or the wire: the
// protocol edge picks a Mechanism by the name in SaslHandshake, feeds
// each SaslAuthenticate payload to the Session's Evaluate, answers with
// what it returns, and on an error (an *AuthError, matching
// ErrAuthenticationFailed) answers SASL_AUTHENTICATION_FAILED with
// ClientMessage and closes. Once Done, Principal is the client's
// User:<name> and Expiry, where the mechanism has one, bounds the session
// for connections.max.reauth.ms (KIP-368).
//
// ClientMechanism is the one client side: the franz-go mechanism that logs
// in with a JAAS configuration's username and password, for the
// inter-broker connections and the strata command's --command-config.
//
// Mechanisms:
//
//   - PLAIN (RFC 4616): one message, [authzid] NUL user NUL password,
//     checked against the users of a PlainLoginModule's JAAS options
//     (user_<name>="<password>", parsed by ParseJAAS). Passwords are kept
//     as SHA-256 digests and compared in constant time.
//   - SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): client-first
//     (gs2 header without channel binding, user, nonce), server-first
//     (nonce, salt, iterations), client-final (channel binding echo,
//     nonce, proof), server-final (server signature). The server holds
//     only ScramCredential (salt, iterations, StoredKey, ServerKey) and
//     gets it from a ScramLookup the caller supplies, so the store can
//     live anywhere. An unknown user is led through the same exchange on
//     a derived fake credential and fails at the proof, like a wrong
//     password.
//   - OAUTHBEARER (RFC 7628): the client's initial response carries a
//     JWT, verified against a JWKS (file or http(s) endpoint) with
//     expected issuer and audience, exp/nbf/iat within a clock skew, the
//     principal from the sub claim and the session's expiry from exp. A
//     refused token is answered with Kafka's {"status":"invalid_token"}
//     challenge; the exchange fails on the client's %x01 reply.
//
// SCRAM is written on the standard library (crypto/hmac, crypto/pbkdf2,
// crypto/sha256, crypto/sha512) rather than taken from a library such as
// github.com/xdg-go/scram: the server side is a few hundred lines over
// primitives the standard library already vets, its parsers are fuzzed
// here, and Kafka's particular rules (gs2 flag n only, tokenauth, the
// iteration bounds, salted passwords from AlterUserScramCredentials, the
// unknown-user behaviour) sit more easily in our own code than around a
// library's. JWT signatures and claims are checked by
// github.com/golang-jwt/jwt/v5, a widely used and maintained library,
// restricted to asymmetric algorithms; the JWKS is parsed here with the
// standard library.
//
// Concurrency: a Mechanism is built once per listener and shared, and is
// immutable but for what is noted; a Session belongs to one connection
// and is used by its goroutine only, so it has no locks. Shared state:
// Scram's fake iteration count is an atomic; a ScramLookup must be safe
// for concurrent use; the JWKS cache is an atomic pointer to an immutable
// key set, read without locks, and replaced under a mutex that makes
// concurrent sessions needing a re-read wait for one fetch. No package
// goroutines run in the background.
package sasl
