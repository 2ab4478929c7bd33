package fetchsession

// Client is a fetcher's side of a session, as Kafka's
// FetchSessionHandler: Build turns the partitions to fetch into a full
// fetch (opening a session) or, once the broker opened one, an
// incremental fetch naming only what changed since the last; Done and
// Reset follow the answer. The zero Client starts with a full fetch.
type Client struct {
	id      int32
	epoch   int32             // the epoch the next fetch carries; InitialEpoch: full
	sent    map[Key]Partition // the session's partitions as the broker has them
	pending map[Key]Partition // what the fetch in flight makes them
}

// Build returns the session fields of the next fetch of parts: the
// session id and epoch, the partitions to name and the ones to forget.
// A full fetch names all of parts; an incremental one those that are new
// or whose fetch changed, and forgets those no longer in parts.
func (c *Client) Build(parts []Partition) (id, epoch int32, send []Partition, forget []Key) {
	c.pending = make(map[Key]Partition, len(parts))
	for _, p := range parts {
		c.pending[p.Key] = p
	}
	if c.epoch == InitialEpoch {
		return c.id, InitialEpoch, parts, nil
	}
	for _, p := range parts {
		if was, ok := c.sent[p.Key]; !ok || was != p {
			send = append(send, p)
		}
	}
	for k := range c.sent {
		if _, ok := c.pending[k]; !ok {
			forget = append(forget, k)
		}
	}
	return c.id, c.epoch, send, forget
}

// Done takes the answer to the last Build's fetch: the session id it
// carries and whether it succeeded as a whole. A failure, or an answer
// for another session, resets the session (Reset).
func (c *Client) Done(id int32, ok bool) {
	switch {
	case !ok:
		c.Reset()
	case c.epoch == InitialEpoch:
		c.id, c.sent = id, c.pending
		if id != InvalidSessionID {
			c.epoch = NextEpoch(InitialEpoch)
		}
	case id != c.id:
		c.Reset()
	default:
		c.sent, c.epoch = c.pending, NextEpoch(c.epoch)
	}
	c.pending = nil
}

// Reset makes the next fetch full; it closes the current session, if
// any, and asks for a new one. Use it when a fetch's answer is lost (the
// connection failed or was cut), since the broker may have moved the
// session on.
func (c *Client) Reset() {
	c.epoch, c.sent, c.pending = InitialEpoch, nil, nil
}

// SessionID is the session's id, InvalidSessionID when there is none.
func (c *Client) SessionID() int32 { return c.id }
