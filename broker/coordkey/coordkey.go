// Package coordkey maps a coordinator key (a group id, a transactional
// id) to the partition of its internal topic (__consumer_offsets,
// __transaction_state) whose leader coordinates it, with the function
// Kafka uses for both, so that clients and Kafka tools find the same
// coordinator on Strata.
//
// Concurrency: pure functions, safe for concurrent use.
package coordkey

import "unicode/utf16"

// PartitionFor is the partition of an internal topic with n partitions
// whose leader coordinates key, as Kafka computes it:
// Utils.abs(key.hashCode()) % n, with Java's String.hashCode over UTF-16
// code units. It returns 0 when n ≤ 0.
func PartitionFor(key string, n int32) int32 {
	if n <= 0 {
		return 0
	}
	h := javaHashCode(key)
	if h == -1<<31 { // Kafka's Utils.abs maps Integer.MIN_VALUE to 0
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// javaHashCode is java.lang.String.hashCode: s[0]*31^(n-1) + … + s[n-1]
// over the UTF-16 code units of s, in wrapping 32-bit arithmetic. Invalid
// UTF-8 decodes to U+FFFD, as Java's decoder would replace it.
func javaHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
			continue
		}
		h = 31*h + r
	}
	return h
}
