package config

import (
	"sort"
	"strings"
)

// Entry is one row of a DescribeConfigs answer. Source and Type use
// Kafka's codes (Source*, Type*). Value is "" for a sensitive key and for
// a key whose Kafka default is null and that is unset (Kafka answers null).
type Entry struct {
	Name      string
	Value     string
	Source    int8
	Sensitive bool
	ReadOnly  bool
	Type      int8
	Doc       string
}

// DescribeBroker lists every broker key with its effective value, sorted by
// name. All are read-only: Strata has no dynamic broker configuration yet.
func (b *Broker) DescribeBroker() []Entry {
	out := make([]Entry, 0, len(brokerKeys))
	for i := range brokerKeys {
		d := &brokerKeys[i]
		e := Entry{Name: d.name, Value: b.Raw[d.name], Source: b.Source(d.name),
			Sensitive: d.sensitive, ReadOnly: true, Type: d.typ, Doc: d.doc}
		if d.sensitive {
			e.Value = ""
		}
		out = append(out, e)
	}
	sortEntries(out)
	return out
}

// DescribeTopic lists every topic key for a topic with the given overrides,
// sorted by name. An override is reported as SourceDynamicTopic, a value
// inherited from a broker key set in the properties file (or one it falls
// back to) as SourceStaticBroker, anything else as SourceDefault. Unknown
// override keys are left out; an override that does not parse is shown as
// written.
func (b *Broker) DescribeTopic(overrides map[string]string) []Entry {
	out := make([]Entry, 0, len(topicKeys))
	for i := range topicKeys {
		d := &topicKeys[i]
		e := Entry{Name: d.name, Type: d.typ, Doc: d.doc, Source: SourceDefault}
		if v, ok := overrides[d.name]; ok {
			e.Value, e.Source = canonical(d, v), SourceDynamicTopic
		} else {
			e.Value = b.topicDefault(d)
			if d.broker != "" && b.setOrFallbackSet(d.broker) {
				e.Source = SourceStaticBroker
			}
		}
		out = append(out, e)
	}
	sortEntries(out)
	return out
}

// setOrFallbackSet reports whether key, or a key it falls back to, was set
// explicitly.
func (b *Broker) setOrFallbackSet(key string) bool {
	if b.isSet(key) {
		return true
	}
	for _, s := range brokerIndex[key].synonyms {
		if b.isSet(s) {
			return true
		}
	}
	return false
}

// canonical renders v the way the topic table stores it ("  100" → "100",
// "logappendtime" → "LogAppendTime"), or v itself if it does not parse.
func canonical(d *topicDef, v string) string {
	var t Topic
	if d.f.set(&t, strings.TrimSpace(v)) != nil {
		return v
	}
	return d.f.get(&t)
}

func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
}
