package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Security protocols of a listener (Kafka's SecurityProtocol).
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

var securityProtocols = []string{ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL}

// defaultProtocolMap is listener.security.protocol.map's default, Kafka's:
// each security protocol's name is a listener name using it.
const defaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

// Listener is one named listener (listeners, listener.security.protocol.map,
// advertised.listeners).
type Listener struct {
	Name     string // upper case, as Kafka normalises it: "PLAINTEXT", "CLIENT"
	Addr     string // host:port to bind; host "" = all interfaces, port 0 = any free port
	Protocol string // ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext or ProtocolSASLSSL
	// Advertised is the host:port given to clients and other brokers for
	// this listener ("" when advertised.listeners leaves it out: the
	// listener is then not published). The broker substitutes its bound
	// address for an empty host or port 0.
	Advertised string
}

// TLS reports whether the listener's connections use TLS.
func (l Listener) TLS() bool { return l.Protocol == ProtocolSSL || l.Protocol == ProtocolSASLSSL }

// SASL reports whether the listener's connections authenticate with SASL.
func (l Listener) SASL() bool {
	return l.Protocol == ProtocolSASLPlaintext || l.Protocol == ProtocolSASLSSL
}

// listenerName is Kafka's listener name syntax.
var listenerName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// listenerItem accepts "NAME://host:port" (Kafka's form) or a bare
// "host:port", which is the PLAINTEXT listener, and returns the canonical
// "NAME://host:port" with the name in upper case.
func listenerItem(v string) (string, error) {
	name, addr := ProtocolPlaintext, v
	if i := strings.Index(v, "://"); i >= 0 {
		name, addr = strings.ToUpper(v[:i]), v[i+3:]
		if !listenerName.MatchString(name) {
			return "", fmt.Errorf("listener %q: invalid listener name %q", v, v[:i])
		}
	}
	hp, err := hostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listener %q: %w", v, err)
	}
	return name + "://" + hp, nil
}

// alsoTargets adds to f's targets the fields derived from its key (a key
// is wired when code outside config reads one of them).
func alsoTargets[S any](f field[S], derived func(*S) []any) field[S] {
	targets := f.targets
	f.targets = func(s *S) []any { return append(targets(s), derived(s)...) }
	return f
}

// splitListener splits a canonical listenerItem.
func splitListener(v string) (name, addr string) {
	name, addr, _ = strings.Cut(v, "://")
	return name, addr
}

// protocolMapField parses listener.security.protocol.map:
// "NAME:PROTOCOL,..." with names upper-cased.
func protocolMapField[S any](p func(*S) *map[string]string) field[S] {
	return field[S]{
		set: func(s *S, v string) error {
			items, err := splitList(v)
			if err != nil {
				return err
			}
			m := make(map[string]string, len(items))
			for _, it := range items {
				name, proto, ok := strings.Cut(it, ":")
				name = strings.ToUpper(strings.TrimSpace(name))
				if !ok || !listenerName.MatchString(name) {
					return fmt.Errorf("invalid entry %q: want LISTENER_NAME:SECURITY_PROTOCOL", it)
				}
				c, err := oneOf(strings.TrimSpace(proto), securityProtocols)
				if err != nil {
					return fmt.Errorf("listener %s: %w", name, err)
				}
				if _, dup := m[name]; dup {
					return fmt.Errorf("listener %s is mapped twice", name)
				}
				m[name] = c
			}
			*p(s) = m
			return nil
		},
		get: func(s *S) string {
			names := slices.Sorted(maps.Keys(*p(s)))
			out := make([]string, len(names))
			for i, n := range names {
				out[i] = n + ":" + (*p(s))[n]
			}
			return strings.Join(out, ",")
		},
		targets: func(s *S) []any { return []any{p(s)} },
	}
}

// deriveListeners builds KafkaListeners from listeners,
// listener.security.protocol.map and advertised.listeners, and the
// inter-broker listener's name, with Kafka's checks.
func (b *Broker) deriveListeners() error {
	if len(b.Listeners) == 0 {
		return invalid("listeners", fmt.Errorf("must name at least one listener"))
	}
	if !b.isSet("advertised.listeners") {
		b.AdvertisedListeners = append([]string(nil), b.Listeners...)
	}
	b.KafkaListeners = make([]Listener, 0, len(b.Listeners))
	ports := map[string]string{}
	for _, l := range b.Listeners {
		name, addr := splitListener(l)
		if slices.ContainsFunc(b.KafkaListeners, func(o Listener) bool { return o.Name == name }) {
			return invalid("listeners", fmt.Errorf("each listener must have a different name: %s appears twice", name))
		}
		_, port := splitHostPort(addr)
		if other, ok := ports[port]; ok && port != "0" {
			return invalid("listeners", fmt.Errorf("each listener must have a different port: %s and %s both use %s", other, name, port))
		}
		ports[port] = name
		proto, ok := b.ListenerSecurityProtocolMap[name]
		if !ok {
			return invalid("listener.security.protocol.map", fmt.Errorf("no security protocol defined for listener %s", name))
		}
		b.KafkaListeners = append(b.KafkaListeners, Listener{Name: name, Addr: addr, Protocol: proto})
	}
	seen := map[string]bool{}
	for _, l := range b.AdvertisedListeners {
		name, addr := splitListener(l)
		i := slices.IndexFunc(b.KafkaListeners, func(o Listener) bool { return o.Name == name })
		if i < 0 {
			return invalid("advertised.listeners", fmt.Errorf("listener %s is not in listeners (%s)", name, strings.Join(b.listenerNames(), ",")))
		}
		if seen[name] {
			return invalid("advertised.listeners", fmt.Errorf("each listener must have a different name: %s appears twice", name))
		}
		seen[name] = true
		b.KafkaListeners[i].Advertised = addr
	}
	switch {
	case b.isSet("inter.broker.listener.name") && b.isSet("security.inter.broker.protocol") &&
		!strings.EqualFold(b.InterBrokerListenerName, b.securityInterBrokerProtocol):
		// Kafka refuses both set; the same value twice (a configuration
		// written from Raw) is let through.
		return invalid("inter.broker.listener.name", fmt.Errorf("only one of inter.broker.listener.name and security.inter.broker.protocol should be set"))
	case b.isSet("inter.broker.listener.name") && b.InterBrokerListenerName != "":
		b.InterBrokerListenerName = strings.ToUpper(b.InterBrokerListenerName)
	default:
		b.InterBrokerListenerName = b.securityInterBrokerProtocol
	}
	if !seen[b.InterBrokerListenerName] {
		key := "inter.broker.listener.name"
		if !b.isSet(key) {
			key = "security.inter.broker.protocol"
		}
		return invalid(key, fmt.Errorf("the inter-broker listener %s must be a listener name defined in advertised.listeners (%s)",
			b.InterBrokerListenerName, strings.Join(slices.Sorted(maps.Keys(seen)), ",")))
	}
	return nil
}

func (b *Broker) listenerNames() []string {
	out := make([]string, len(b.KafkaListeners))
	for i, l := range b.KafkaListeners {
		out[i] = l.Name
	}
	return out
}

func splitHostPort(hp string) (host, port string) {
	i := strings.LastIndex(hp, ":")
	return strings.Trim(hp[:i], "[]"), hp[i+1:]
}

// InterBrokerListener is the listener other brokers reach this one on,
// and this one them (inter.broker.listener.name).
func (b *Broker) InterBrokerListener() Listener {
	for _, l := range b.KafkaListeners {
		if l.Name == b.InterBrokerListenerName {
			return l
		}
	}
	return Listener{} // unreachable: derive checks it is one
}

// listenerPrefix opens a per-listener key: listener.name.<name>.<key>.
const listenerPrefix = "listener.name."

// listenerKey splits listener.name.<name>.<key> where key is a broker key
// that may be set per listener (ssl.*, sasl.*, or a mechanism's
// <mechanism>.sasl.jaas.config), returning the name in lower case.
func listenerKey(k string) (name, key string, ok bool) {
	rest, ok := strings.CutPrefix(k, listenerPrefix)
	if !ok {
		return "", "", false
	}
	name, key, ok = strings.Cut(rest, ".")
	if !ok || name == "" {
		return "", "", false
	}
	if _, jaas := jaasMechanism(key); jaas {
		return strings.ToLower(name), key, true
	}
	if !strings.HasPrefix(key, "ssl.") && !strings.HasPrefix(key, "sasl.") {
		return "", "", false
	}
	if _, known := brokerIndex[key]; !known {
		return "", "", false
	}
	return strings.ToLower(name), key, true
}

// listenerKeyDef is the definition of a per-listener key's broker key
// (sasl.jaas.config for a mechanism's JAAS key).
func listenerKeyDef(key string) *keyDef {
	if _, jaas := jaasMechanism(key); jaas {
		return brokerIndex["sasl.jaas.config"]
	}
	return brokerIndex[key]
}

// deriveListenerSSL checks the per-listener ssl.* and sasl.* overrides
// and builds each listener's SSL and SASL settings: the broker-wide ones
// overlaid by its own.
func (b *Broker) deriveListenerSSL() error {
	b.listenerSSL = map[string]SSL{}
	b.listenerSASL = map[string]SASL{}
	byName := map[string][]string{}
	for k := range b.set {
		if name, _, ok := listenerKey(k); ok {
			byName[name] = append(byName[name], k)
		}
	}
	for name, keys := range byName {
		if !slices.ContainsFunc(b.KafkaListeners, func(l Listener) bool { return strings.ToLower(l.Name) == name }) {
			return invalid(keys[0], fmt.Errorf("listener %s is not in listeners (%s)", strings.ToUpper(name), strings.Join(b.listenerNames(), ",")))
		}
		sort.Strings(keys)
		o := &Broker{SSL: b.SSL, SASL: b.SASL}
		o.SASL.JAAS = map[string]string{}
		for _, k := range keys {
			_, key, _ := listenerKey(k)
			if mech, jaas := jaasMechanism(key); jaas {
				o.SASL.JAAS[mech] = b.set[k]
				continue
			}
			if err := brokerIndex[key].f.set(o, b.set[k]); err != nil {
				return invalid(k, err)
			}
		}
		b.listenerSSL[name], b.listenerSASL[name] = o.SSL, o.SASL
	}
	return nil
}

// SSLFor returns a listener's SSL settings: the ssl.* keys overlaid by its
// listener.name.<name>.ssl.* ones.
func (b *Broker) SSLFor(listener string) SSL {
	if s, ok := b.listenerSSL[strings.ToLower(listener)]; ok {
		return s
	}
	return b.SSL
}

// ListenerOverrides returns the listener.name.<name>.* keys set, with
// their values (sensitive ones included: redact before printing).
func (b *Broker) ListenerOverrides() map[string]string {
	out := map[string]string{}
	for k, v := range b.set {
		if _, _, ok := listenerKey(k); ok {
			out[k] = v
		}
	}
	return out
}
