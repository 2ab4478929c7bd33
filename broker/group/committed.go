package group

// Committed is one committed offset of a group this broker coordinates.
type Committed struct {
	Group string
	TopicPartition
	Offset int64
}

// AllCommitted lists the groups this broker coordinates and every
// offset they have committed: what the consumer-lag metrics and the
// console's lag columns are computed from. Groups of a partition of
// __consumer_offsets that is still loading are left out.
func (c *Coordinator) AllCommitted() ([]Listing, []Committed) {
	listed, _ := c.List(nil, nil)
	var out []Committed
	for _, l := range listed {
		offsets, err := c.FetchOffsets(l.Group, nil)
		if err != nil {
			continue
		}
		for tp, o := range offsets {
			out = append(out, Committed{Group: l.Group, TopicPartition: tp, Offset: o.Offset})
		}
	}
	return listed, out
}
