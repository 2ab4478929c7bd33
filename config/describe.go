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
	// Synonyms are the places the value may come from, highest
	// precedence first, as Kafka lists them (DescribeConfigs'
	// IncludeSynonyms); Source is the first one's.
	Synonyms []Synonym
}

// Synonym is one place a value is set: a key (the entry's own, or one it
// falls back to) in one layer.
type Synonym struct {
	Name   string
	Value  string // "" for a sensitive key
	Source int8
}

// DescribeBroker lists every broker key with its effective value, sorted
// by name. A key is read-only unless it is dynamic. Its synonyms are the
// key and the keys it falls back to (log.retention.ms: .minutes, .hours)
// in each layer that sets them: this broker's dynamic configs, the
// cluster default, the static configuration and the built-in defaults;
// as Kafka, those before the first one of the key itself are left out.
func (b *Broker) DescribeBroker() []Entry {
	out := make([]Entry, 0, len(brokerKeys))
	for i := range brokerKeys {
		d := &brokerKeys[i]
		syns := b.synonyms(synonymGroups[d.name], d.sensitive)
		for len(syns) > 0 && syns[0].Name != d.name {
			syns = syns[1:]
		}
		out = append(out, b.brokerEntry(d, b.Raw[d.name], syns))
	}
	for k, v := range b.ListenerOverrides() { // as Kafka lists a listener's own ssl.* keys
		_, key, _ := listenerKey(k)
		d := listenerKeyDef(key)
		e := Entry{Name: k, Value: v, Source: SourceStaticBroker, Sensitive: d.sensitive, ReadOnly: true, Type: d.typ, Doc: d.doc,
			Synonyms: []Synonym{{Name: k, Value: v, Source: SourceStaticBroker}}}
		if d.sensitive {
			e.Value, e.Synonyms[0].Value = "", ""
		}
		out = append(out, e)
	}
	sortEntries(out)
	return out
}

// DescribeClusterDefault lists the keys of the dynamic cluster default
// (Kafka's <default> broker resource) with their values, sorted by name;
// their synonyms are the cluster default's only.
func (b *Broker) DescribeClusterDefault() []Entry {
	out := make([]Entry, 0, len(b.dynDefault))
	for _, k := range sortedKeys(b.dynDefault) {
		d := brokerIndex[k]
		var syns []Synonym
		for _, s := range b.synonyms(synonymGroups[k], d.sensitive) {
			if s.Source == SourceDynamicDefaultBroker {
				syns = append(syns, s)
			}
		}
		out = append(out, b.brokerEntry(d, b.dynDefault[k], syns))
	}
	return out
}

func (b *Broker) brokerEntry(d *keyDef, value string, syns []Synonym) Entry {
	e := Entry{Name: d.name, Value: value, Source: SourceDefault, Sensitive: d.sensitive,
		ReadOnly: !d.dynamic, Type: d.typ, Doc: d.doc, Synonyms: syns}
	if len(syns) > 0 {
		e.Source = syns[0].Source
	}
	if d.sensitive {
		e.Value = ""
	}
	return e
}

// synonyms lists where the keys of group are set, by precedence: each
// set layer (highest first), then the built-in defaults, each in group
// order.
func (b *Broker) synonyms(group []string, sensitive bool) []Synonym {
	var out []Synonym
	add := func(name, value string, source int8) {
		if sensitive {
			value = ""
		}
		out = append(out, Synonym{Name: name, Value: value, Source: source})
	}
	for _, l := range b.layers() {
		for _, k := range group {
			if v, ok := l.m[k]; ok {
				add(k, v, l.source)
			}
		}
	}
	for _, k := range group {
		if d := brokerIndex[k]; d.kind == keyDefault {
			add(k, d.def, SourceDefault)
		}
	}
	return out
}

// synonymGroups maps every broker key to itself and the keys that stand
// for the same setting, the one that takes precedence first (Kafka's
// broker config synonyms): log.retention.hours → log.retention.ms,
// log.retention.minutes, log.retention.hours.
var synonymGroups = map[string][]string{}

func init() {
	for _, d := range brokerKeys {
		if _, ok := synonymGroups[d.name]; !ok {
			synonymGroups[d.name] = []string{d.name}
		}
		if len(d.synonyms) == 0 {
			continue
		}
		group := append([]string{d.name}, d.synonyms...)
		synonymGroups[d.name] = group
		for _, s := range d.synonyms {
			synonymGroups[s] = group
		}
	}
}

// DescribeTopic lists every topic key for a topic with the given
// overrides, sorted by name. An override is reported as
// SourceDynamicTopic; a value inherited from the broker key behind the
// topic key by that broker key's source (dynamic, static or default:
// its synonyms, all layers, follow the override). Unknown override keys
// are left out; an override that does not parse is shown as written.
func (b *Broker) DescribeTopic(overrides map[string]string) []Entry {
	out := make([]Entry, 0, len(topicKeys))
	for i := range topicKeys {
		d := &topicKeys[i]
		e := Entry{Name: d.name, Type: d.typ, Doc: d.doc, Source: SourceDefault}
		if d.broker != "" {
			e.Synonyms = b.synonyms(synonymGroups[d.broker], false)
		}
		if v, ok := overrides[d.name]; ok {
			e.Value = canonical(d, v)
			e.Synonyms = append([]Synonym{{Name: d.name, Value: e.Value, Source: SourceDynamicTopic}}, e.Synonyms...)
		} else {
			e.Value = b.topicDefault(d)
		}
		if len(e.Synonyms) > 0 {
			e.Source = e.Synonyms[0].Source
		}
		out = append(out, e)
	}
	sortEntries(out)
	return out
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
